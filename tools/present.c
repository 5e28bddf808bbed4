/*
 * The device where programs look for it outside libibverbs: UCX stats
 * /dev/infiniband/<ibv_device.dev_name>, and UCX, rdma-core's tools and
 * test suites read /sys/class/infiniband/<dev>/... and
 * /sys/class/infiniband_verbs/uverbsN/. `softofed run` writes them for the
 * program it starts, in a private mount namespace (mountns.c), from the
 * daemon's STATUS and NETDEVS answers, in the kernel's layout and formats
 * (drivers/infiniband/core/sysfs.c, uverbs_main.c). The library names its
 * ibv_device after the uverbsN whose ibdev is sof0 (verbs/context.c).
 *
 * Also /dev/infiniband/rdma_cm (librdmacm's device, which programs test
 * for) and the port's hw_counters/ with rxe's counter names; the port's
 * MAD files: /sys/class/infiniband_mad/{abi_version,umadN/,issmN/} and
 * /dev/infiniband/umadN and issmN of sof0 and sofib0 (what rdma-core's
 * tools and OpenSM look for; our libibumad reaches the daemon instead and
 * opens neither; sofib0's issmN is the daemon's FIFO, held by an SM); and
 * sofib0, the daemon's InfiniBand port when it has one (its port as the
 * kernel shows an InfiniBand one: link_layer, lid, sm_lid, lmc, state,
 * phys_state, rate, its GID and P_Keys).
 * It is a snapshot taken when the program starts: GIDs added later show
 * in libibverbs, not here, and hw_counters hold the values of then. Like
 * rxe (a virtual device since Linux 5.x: no parent, so no device/driver
 * link), sof0 has no device/driver; Open MPI, which matches that driver's
 * name against its pml_ucx_devices ("mlx*"), then takes UCX only when
 * asked (--mca pml ucx), as it does on rxe. A machine's real devices stay where they are,
 * beside sof0; ours takes the first uverbsN they leave free.
 *
 * SOFTOFED_PRESENT=0 turns it off; where no namespace can be made (no
 * root, no unprivileged user namespaces) the program runs without it,
 * after one line on stderr.
 */
#include "softofed.h"

#include "sof_umad_proto.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define IB_CLASS "/sys/class/infiniband"
#define UVERBS_CLASS "/sys/class/infiniband_verbs"
#define UMAD_CLASS "/sys/class/infiniband_mad"
#define DEV_DIR "/dev/infiniband"

/* The kernel's uverbs character devices: major 231, minors from 192
 * (IB_UVERBS_MAJOR, IB_UVERBS_BASE_MINOR); its ABI (IB_USER_VERBS_ABI_VERSION). */
#define UVERBS_MAJOR 231
#define UVERBS_BASE_MINOR 192
#define UVERBS_ABI 6
#define MAX_UVERBS 32

/* What verbs/context.c answers in ibv_query_port: 4x EDR, CM_SUP |
 * IP_BASED_GIDS, one P_Key. */
#define PORT_RATE "100 Gb/sec (4X EDR)"
#define PORT_CAP_MASK 0x04010000u

static int put(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int put_uverbs(const struct sof_devinfo *d, int uv);
static void pathf(char *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A path into buf (PATH_MAX bytes); one that does not fit is left empty,
 * so that the call that uses it fails (ENOENT) rather than names another
 * file. */
static void pathf(char *buf, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, PATH_MAX, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= PATH_MAX)
		buf[0] = '\0';
}

/* Write one attribute file (mode 0444, as sysfs shows them). */
static int put(const char *path, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int fd, n, err = 0;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return -EOVERFLOW;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, (size_t)n) != n)
		err = -errno;
	close(fd);
	return err;
}

static void put_in(int *err, const char *dir, const char *file, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* dir/file with the text of fmt; after a first failure (*err) nothing
 * more is written, so a list of these needs one check at its end. */
static void put_in(int *err, const char *dir, const char *file, const char *fmt, ...)
{
	char path[PATH_MAX], text[256];
	va_list ap;
	int n;

	if (*err)
		return;
	pathf(path, "%s/%s", dir, file);
	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	*err = n < 0 || (size_t)n >= sizeof(text) ? -EOVERFLOW : put(path, "%s", text);
}

static int mkdirs(const char *path)
{
	char p[PATH_MAX];

	pathf(p, "%s", path);
	for (char *s = strchr(p + 1, '/');; s = strchr(s + 1, '/')) {
		if (s)
			*s = '\0';
		if (mkdir(p, 0755) && errno != EEXIST)
			return -errno;
		if (!s)
			return 0;
		*s = '/';
	}
}

/* "%04x:%04x:%04x:%04x" of a GUID in network order (sysfs node_guid). */
static void guid_str(char *s, size_t len, uint64_t guid_be)
{
	const uint8_t *g = (const uint8_t *)&guid_be;

	snprintf(s, len, "%02x%02x:%02x%02x:%02x%02x:%02x%02x", g[0], g[1], g[2], g[3], g[4], g[5],
		 g[6], g[7]);
}

/* A GID as sysfs writes it (%pI6): eight groups of four hex digits. */
static void gid_str(char *s, size_t len, const uint8_t *g)
{
	snprintf(s, len, "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
		 g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12],
		 g[13], g[14], g[15]);
}

static const char *port_state_name(uint32_t s)
{
	static const char *const names[] = {"NOP",   "DOWN",   "INIT",
					    "ARMED", "ACTIVE", "ACTIVE_DEFER"};

	return s < sizeof(names) / sizeof(names[0]) ? names[s] : "UNKNOWN";
}

/* The uverbsN whose ibdev names our device, in the sysfs seen now: the
 * index, or -1. Finds an earlier presentation (a nested `softofed run`). */
static int uverbs_of(const char *ibdev)
{
	char path[PATH_MAX], name[64];
	struct dirent *e;
	int found = -1;
	DIR *d = opendir(UVERBS_CLASS);

	if (!d)
		return -1;
	while (found < 0 && (e = readdir(d))) {
		FILE *f;

		if (strncmp(e->d_name, "uverbs", 6))
			continue;
		pathf(path, UVERBS_CLASS "/%s/ibdev", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(name, sizeof(name), f)) {
			name[strcspn(name, "\n")] = '\0';
			if (!strcmp(name, ibdev))
				found = atoi(e->d_name + 6);
		}
		fclose(f);
	}
	closedir(d);
	return found;
}

/* The first uverbsN that the host's real devices leave free. */
static int free_uverbs(void)
{
	char a[PATH_MAX], b[PATH_MAX];

	for (int i = 0; i < MAX_UVERBS; i++) {
		pathf(a, DEV_DIR "/uverbs%d", i);
		pathf(b, UVERBS_CLASS "/uverbs%d", i);
		if (access(a, F_OK) && access(b, F_OK))
			return i;
	}
	return -1;
}

/* device/net/<ifname>/: a few attributes of each interface served. */
static int put_netdev(const char *dir, const char *name, int sock)
{
	char path[PATH_MAX];
	struct ifreq ifr;
	int err;

	pathf(path, "%s/%s", dir, name);
	err = mkdirs(path);
	if (err)
		return err;
	pathf(path, "%s/%s/ifindex", dir, name);
	err = put(path, "%u\n", if_nametoindex(name));
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (!err && sock >= 0 && !ioctl(sock, SIOCGIFHWADDR, &ifr)) {
		const uint8_t *m = (const uint8_t *)ifr.ifr_hwaddr.sa_data;

		pathf(path, "%s/%s/address", dir, name);
		err = put(path, "%02x:%02x:%02x:%02x:%02x:%02x\n", m[0], m[1], m[2], m[3], m[4],
			  m[5]);
	}
	if (!err && sock >= 0 && !ioctl(sock, SIOCGIFMTU, &ifr)) {
		pathf(path, "%s/%s/mtu", dir, name);
		err = put(path, "%d\n", ifr.ifr_mtu);
	}
	return err;
}

/* ports/1/: state, rates, the GID table with each entry's type and
 * network device, the P_Key table. Entries not in use read as the zero
 * GID and have no gid_attrs, as in the kernel (whose read fails there). */
static int put_port(const char *ibdir, const struct sof_devinfo *d)
{
	char p[PATH_MAX], dir[PATH_MAX], gid[64], ifname[IF_NAMESIZE];
	static const uint8_t zero[16];
	uint32_t state = d->port_state ? d->port_state : 4;
	int err;
	static const char *const subdirs[] = {"gids", "gid_attrs/types", "gid_attrs/ndevs",
					      "pkeys"};

	pathf(dir, "%s/ports/1", ibdir);
	for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
		pathf(p, "%s/%s", dir, subdirs[i]);
		err = mkdirs(p);
		if (err)
			return err;
	}
	put_in(&err, dir, "state", "%u: %s\n", state, port_state_name(state));
	put_in(&err, dir, "phys_state", "5: LinkUp\n");
	put_in(&err, dir, "link_layer", "Ethernet\n");
	put_in(&err, dir, "rate", PORT_RATE "\n");
	put_in(&err, dir, "lid", "0x0\n");
	put_in(&err, dir, "sm_lid", "0x0\n");
	put_in(&err, dir, "lid_mask_count", "0\n");
	put_in(&err, dir, "sm_sl", "0\n");
	put_in(&err, dir, "cap_mask", "0x%08x\n", PORT_CAP_MASK);
	put_in(&err, dir, "pkeys/0", "0xffff\n");
	for (uint32_t i = 0; i < SOF_MAX_GIDS; i++) {
		const struct sof_gid_entry *e = &d->gids[i];
		bool used = i < d->num_gids && memcmp(e->gid, zero, sizeof(zero));
		char file[64];

		gid_str(gid, sizeof(gid), used ? e->gid : zero);
		snprintf(file, sizeof(file), "gids/%u", i);
		put_in(&err, dir, file, "%s\n", gid);
		if (!used)
			continue;
		snprintf(file, sizeof(file), "gid_attrs/types/%u", i);
		put_in(&err, dir, file, "%s\n", e->type == 1 ? "RoCE v2" : "IB/RoCE v1");
		if (e->ifindex && if_indextoname(e->ifindex, ifname)) {
			snprintf(file, sizeof(file), "gid_attrs/ndevs/%u", i);
			put_in(&err, dir, file, "%s\n", ifname);
		}
	}
	return err;
}

/* sofib0's ports/1/: what its subnet manager set, as the kernel shows an
 * InfiniBand port (one GID: the subnet prefix and the port GUID; the
 * P_Key table). A snapshot, as the rest. */
static int put_ib_port(const char *ibdir, const struct sof_ib_port *ip)
{
	static const char *const phys[] = {"NoStateChange", "Sleep", "Polling", "Disabled",
					   "PortConfigurationTraining", "LinkUp",
					   "LinkErrorRecovery"};
	char p[PATH_MAX], dir[PATH_MAX], gid[64], file[32];
	static const char *const subdirs[] = {"gids", "gid_attrs/types", "pkeys"};
	uint64_t v[2] = {htobe64(ip->subnet_prefix), htobe64(ip->port_guid)};
	int err = 0;

	pathf(dir, "%s/ports/1", ibdir);
	for (size_t i = 0; !err && i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
		pathf(p, "%s/%s", dir, subdirs[i]);
		err = mkdirs(p);
	}
	put_in(&err, dir, "state", "%u: %s\n", ip->state, port_state_name(ip->state));
	put_in(&err, dir, "phys_state", "%u: %s\n", ip->phys_state,
	       ip->phys_state < sizeof(phys) / sizeof(phys[0]) ? phys[ip->phys_state] : "?");
	put_in(&err, dir, "link_layer", "InfiniBand\n");
	put_in(&err, dir, "rate", PORT_RATE "\n");
	put_in(&err, dir, "lid", "0x%x\n", ip->lid);
	put_in(&err, dir, "sm_lid", "0x%x\n", ip->sm_lid);
	put_in(&err, dir, "lid_mask_count", "%u\n", ip->lmc);
	put_in(&err, dir, "sm_sl", "%u\n", ip->sm_sl);
	/* IsCM (verbs/context.c's IBV_PORT_CM_SUP), no IP-based GIDs */
	put_in(&err, dir, "cap_mask", "0x%08x\n", 0x00010000u);
	gid_str(gid, sizeof(gid), (const uint8_t *)v);
	put_in(&err, dir, "gids/0", "%s\n", gid);
	put_in(&err, dir, "gid_attrs/types/0", "IB/RoCE v1\n");
	for (unsigned i = 0; i < SOF_IB_PKEYS; i++) {
		snprintf(file, sizeof(file), "pkeys/%u", i);
		put_in(&err, dir, file, "0x%04x\n", ip->pkeys[i]);
	}
	return err;
}

/* /sys/class/infiniband/sofib0/: the daemon's InfiniBand port as a device
 * of its own (daemon/README.md), its uverbsN the next free one. */
static int put_ib(const struct sof_ib_status_rep *ib, const struct sof_devinfo *sof0)
{
	const struct sof_ib_port *ip = &ib->port;
	struct sof_devinfo d = *sof0;
	char dir[PATH_MAX], p[PATH_MAX], guid[64];
	int err, uv = free_uverbs();

	if (uv < 0)
		return -ENOSPC;
	snprintf(d.name, sizeof(d.name), "%s", SOF_IB_DEV_NAME);
	d.node_guid = htobe64(ip->node_guid);
	d.sys_image_guid = d.node_guid;
	pathf(dir, IB_CLASS "/%s", SOF_IB_DEV_NAME);
	pathf(p, "%s/device/infiniband_verbs", dir);
	err = mkdirs(p);
	guid_str(guid, sizeof(guid), d.node_guid);
	put_in(&err, dir, "node_guid", "%s\n", guid);
	put_in(&err, dir, "sys_image_guid", "%s\n", guid);
	put_in(&err, dir, "node_type", "1: CA\n");
	put_in(&err, dir, "fw_ver", "%.*s\n", (int)sizeof(d.fw_ver), d.fw_ver);
	put_in(&err, dir, "hw_rev", "0x%x\n", d.hw_ver);
	put_in(&err, dir, "hca_type", "softofed\n");
	put_in(&err, dir, "board_id", "softofed\n");
	put_in(&err, dir, "node_desc", "%.*s\n", (int)sizeof(ip->node_name), ip->node_name);
	put_in(&err, dir, "device/numa_node", "-1\n");
	if (err)
		return err;
	pathf(p, "%s/device/infiniband_verbs/uverbs%d", dir, uv);
	snprintf(guid, sizeof(guid), "../../../../infiniband_verbs/uverbs%d", uv);
	if (symlink(guid, p))
		return -errno;
	err = put_ib_port(dir, ip);
	return err ? err : put_uverbs(&d, uv);
}

/* ports/1/hw_counters/: rxe's names (rxe_hw_counters.c) with the values
 * of our port counters that count the same thing (0 for those we do not
 * count), and lifespan (the kernel's default, 10 ms). */
static int put_hw_counters(const char *ibdir, const struct sof_status_rep *st)
{
	static const struct {
		const char *name;
		int cnt; /* enum sof_counter, or -1 */
	} map[] = {
	    {"sent_pkts", SOF_CNT_tx_packets},
	    {"rcvd_pkts", SOF_CNT_rx_packets},
	    {"duplicate_request", SOF_CNT_dup_req},
	    {"out_of_seq_request", SOF_CNT_seq_err},
	    {"rcvd_rnr_err", SOF_CNT_rnr_nak_rcvd},
	    {"send_rnr_err", SOF_CNT_rnr_nak_sent},
	    {"rcvd_seq_err", SOF_CNT_nak_rcvd},
	    {"ack_deferred", -1},
	    {"retry_exceeded_err", -1},
	    {"retry_rnr_exceeded_err", -1},
	    {"completer_retry_err", SOF_CNT_retransmits},
	    {"send_err", -1},
	    {"link_downed", -1},
	    {"rdma_sends", -1},
	    {"rdma_recvs", -1},
	};
	char dir[PATH_MAX];
	int err;

	pathf(dir, "%s/ports/1/hw_counters", ibdir);
	err = mkdirs(dir);
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		put_in(&err, dir, map[i].name, "%llu\n",
		       map[i].cnt < 0 ? 0ull : (unsigned long long)st->counters[map[i].cnt]);
	put_in(&err, dir, "lifespan", "10\n");
	return err;
}

/* rxe's "parent" attribute names the network device it is bound to; ours
 * the first served interface that is not lo (else lo). Its index, or -1. */
static int parent_of(const struct sof_netdevs_rep *nd)
{
	int pick = -1;

	for (uint32_t i = 0; i < nd->n && i < SOF_MAX_NETDEVS; i++)
		if (nd->dev[i].ifindex && (pick < 0 || !strcmp(nd->dev[pick].name, "lo")))
			pick = (int)i;
	return pick;
}

/* /sys/class/infiniband/<dev>/ and its device/ directory. */
static int put_ibdev(const struct sof_status_rep *st, const struct sof_netdevs_rep *nd, int uv)
{
	const struct sof_devinfo *d = &st->dev;
	char dir[PATH_MAX], p[PATH_MAX], guid[64], host[64] = "";
	int err, sock, pick;

	pathf(dir, IB_CLASS "/%.*s", (int)sizeof(d->name), d->name);
	pathf(p, "%s/device/net", dir);
	err = mkdirs(p);
	if (err)
		return err;
	pathf(p, "%s/device/infiniband_verbs", dir);
	err = mkdirs(p);
	if (err)
		return err;
	guid_str(guid, sizeof(guid), d->node_guid);
	put_in(&err, dir, "node_guid", "%s\n", guid);
	guid_str(guid, sizeof(guid), d->sys_image_guid);
	put_in(&err, dir, "sys_image_guid", "%s\n", guid);
	put_in(&err, dir, "node_type", "1: CA\n");
	put_in(&err, dir, "fw_ver", "%.*s\n", (int)sizeof(d->fw_ver), d->fw_ver);
	put_in(&err, dir, "hw_rev", "0x%x\n", d->hw_ver);
	put_in(&err, dir, "hca_type", "softofed\n");
	put_in(&err, dir, "board_id", "softofed\n");
	gethostname(host, sizeof(host) - 1);
	put_in(&err, dir, "node_desc", "%s %.*s\n", host, (int)sizeof(d->name), d->name);
	/* A device of no NUMA node, as the kernel says for a virtual one. */
	put_in(&err, dir, "device/numa_node", "-1\n");
	if (err)
		return err;
	pathf(p, "%s/device/infiniband_verbs/uverbs%d", dir, uv);
	snprintf(guid, sizeof(guid), "../../../../infiniband_verbs/uverbs%d", uv);
	if (symlink(guid, p))
		return -errno;
	pick = parent_of(nd);
	if (pick >= 0)
		put_in(&err, dir, "parent", "%.*s\n", (int)sizeof(nd->dev[pick].name),
		       nd->dev[pick].name);
	sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	pathf(p, "%s/device/net", dir);
	/* lo only when nothing else is served: programs take the first
	 * entry as the device's interface (rdma-core's tests do, for the
	 * address their RDMA CM tests bind), and on a RoCE device that is
	 * never the loopback interface */
	for (uint32_t i = 0; !err && i < nd->n; i++)
		if (nd->dev[i].ifindex &&
		    (strcmp(nd->dev[i].name, "lo") || (pick >= 0 && !strcmp(nd->dev[pick].name, "lo"))))
			err = put_netdev(p, nd->dev[i].name, sock);
	if (sock >= 0)
		close(sock);
	if (!err)
		err = put_port(dir, d);
	return err ? err : put_hw_counters(dir, st);
}

/* /sys/class/infiniband_verbs/uverbsN/ and /dev/infiniband/uverbsN: a
 * character device, the uverbs numbers where we may mknod, else /dev/null
 * bound under the name (an unprivileged user namespace may not make
 * device nodes). UCX only checks it is a character device it may read
 * and write; our library never opens it. */
static int put_uverbs(const struct sof_devinfo *d, int uv)
{
	char p[PATH_MAX], dir[PATH_MAX];
	unsigned minor = UVERBS_BASE_MINOR + (unsigned)uv;
	int err, fd;

	pathf(dir, UVERBS_CLASS "/uverbs%d", uv);
	err = mkdirs(dir);
	if (!err && access(UVERBS_CLASS "/abi_version", F_OK))
		err = put(UVERBS_CLASS "/abi_version", "%d\n", UVERBS_ABI);
	put_in(&err, dir, "ibdev", "%.*s\n", (int)sizeof(d->name), d->name);
	put_in(&err, dir, "abi_version", "1\n");
	put_in(&err, dir, "dev", "%d:%u\n", UVERBS_MAJOR, minor);
	if (err)
		return err;
	pathf(p, "%s/device", dir);
	pathf(dir, "../../infiniband/%.*s/device", (int)sizeof(d->name), d->name);
	if (symlink(dir, p))
		return -errno;

	pathf(p, DEV_DIR "/uverbs%d", uv);
	if (soft_ns_can_mknod() && !mknod(p, S_IFCHR | 0666, makedev(UVERBS_MAJOR, minor)))
		return chmod(p, 0666) ? -errno : 0;
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (fd < 0)
		return -errno;
	close(fd);
	return mount("/dev/null", p, NULL, MS_BIND, NULL) ? -errno : 0;
}

/* /dev/infiniband/rdma_cm where the host has none: librdmacm's character
 * device (a misc device of dynamic minor in the kernel), which programs
 * and scripts test for before they use the RDMA CM. /dev/null bound under
 * the name: a character device anyone may open, so that nothing opens a
 * real device by a number we guessed; our librdmacm never opens it. */
static int put_rdma_cm(void)
{
	int fd;

	if (!access(DEV_DIR "/rdma_cm", F_OK))
		return 0;
	fd = open(DEV_DIR "/rdma_cm", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (fd < 0)
		return -errno;
	close(fd);
	return mount("/dev/null", DEV_DIR "/rdma_cm", NULL, MS_BIND, NULL) ? -errno : 0;
}

/* /dev/null bound under a new name in /dev/infiniband (as rdma_cm). */
static int put_null_dev(const char *p)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);

	if (fd < 0)
		return -errno;
	close(fd);
	return mount("/dev/null", p, NULL, MS_BIND, NULL) ? -errno : 0;
}

/* The daemon's issm FIFO of sofib0 (daemon/ib_sma.c), or "". */
static void issm_fifo(uint32_t pid, char *path, size_t len)
{
	static const char *const dirs[] = {SOF_UMAD_ISSM_DIRS};
	struct stat sb;

	for (unsigned i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, len, SOF_UMAD_ISSM_FMT, dirs[i], (long)pid);
		if (!lstat(path, &sb) && S_ISFIFO(sb.st_mode) && sb.st_uid == geteuid())
			return;
	}
	path[0] = '\0';
}

/* The MAD files of port 1 of ibdev (the kernel's ib_umad: abi_version 5,
 * umadN and issmN of major 231, issm minors 64 above umad's), under the
 * first N that the host's real devices and the earlier ones leave free.
 * The device nodes are /dev/null (our libibumad opens neither), except
 * sofib0's issmN, the daemon's FIFO when it made one: OpenSM holds issmN
 * open while it runs, which sets IsSM in the port's CapabilityMask. */
static int put_umad(const char *ibdev, const char *issm)
{
	static const char *const kinds[] = {"umad", "issm"};
	char p[PATH_MAX], dir[PATH_MAX];
	int n = 0, err = 0;

	for (; n < 64; n++) {
		pathf(p, DEV_DIR "/umad%d", n);
		pathf(dir, UMAD_CLASS "/umad%d", n);
		if (access(p, F_OK) && access(dir, F_OK))
			break;
	}
	if (n == 64)
		return -ENOSPC;
	if (access(UMAD_CLASS "/abi_version", F_OK))
		err = put(UMAD_CLASS "/abi_version", "5\n");
	for (int k = 0; !err && k < 2; k++) {
		pathf(dir, UMAD_CLASS "/%s%d", kinds[k], n);
		err = mkdirs(dir);
		put_in(&err, dir, "ibdev", "%s\n", ibdev);
		put_in(&err, dir, "port", "1\n");
		put_in(&err, dir, "dev", "231:%d\n", n + 64 * k);
		pathf(p, DEV_DIR "/%s%d", kinds[k], n);
		if (err || !access(p, F_OK))
			continue;
		if (k == 1 && issm && issm[0]) {
			int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

			if (fd < 0)
				err = -errno;
			else
				close(fd);
			if (!err && mount(issm, p, NULL, MS_BIND, NULL))
				err = -errno;
		} else {
			err = put_null_dev(p);
		}
	}
	return err;
}

static const char *const covers[] = {IB_CLASS, UVERBS_CLASS, UMAD_CLASS, DEV_DIR};

/* Case (c): the program runs without the presentation; one line says
 * what then does not work. */
static void run_without(const char *why, int err)
{
	const char *hint =
	    !strncmp(why, "unshare", 7) ? "neither root nor unprivileged user namespaces; " : "";

	fprintf(stderr,
		"softofed: sof0 not shown in " DEV_DIR " and " IB_CLASS
		" (%s%s%s%s): programs that "
		"look there (UCX) find no RDMA device; libibverbs and librdmacm work "
		"(SOFTOFED_PRESENT=0 silences this)\n",
		hint, why, err ? ": " : "", err ? strerror(-err) : "");
}

int soft_present(const struct sof_status_rep *st)
{
	const char *env = getenv("SOFTOFED_PRESENT"), *what = "";
	char name[sizeof(st->dev.name) + 1];
	struct sof_netdevs_rep nd;
	bool ib_present = false;
	int err, uv;

	if (env && !strcmp(env, "0"))
		return 0;
	snprintf(name, sizeof(name), "%.*s", (int)sizeof(st->dev.name), st->dev.name);
	if (uverbs_of(name) >= 0)
		return 0; /* shown already: we run inside a presentation */
	err = soft_get_netdevs(&nd);
	if (err) {
		run_without("the daemon's interfaces", err);
		return 0;
	}
	uv = free_uverbs();
	if (uv < 0) {
		run_without("no free uverbs number", 0);
		return 0;
	}
	/* Nothing below may touch the host: all of it happens in here. */
	err = soft_ns_enter(&what);
	if (err == -EUCLEAN) {
		fprintf(stderr, "softofed: %s failed in the new user namespace\n", what);
		return err;
	}
	for (size_t i = 0; !err && i < sizeof(covers) / sizeof(covers[0]); i++) {
		what = covers[i];
		err = soft_ns_cover(covers[i]);
	}
	if (!err) {
		what = "writing the device's files";
		err = put_ibdev(st, &nd, uv);
	}
	if (!err)
		err = put_uverbs(&st->dev, uv);
	if (!err) {
		struct sof_ib_status_rep ib;
		int fd = soft_connect();

		/* sofib0 when the daemon has an InfiniBand port */
		if (fd >= 0 && !soft_rpc(fd, SOF_OP_IB_STATUS, &ib, sizeof(ib)) &&
		    ib.port.present == 1) {
			ib_present = true;
			ib.port.node_name[sizeof(ib.port.node_name) - 1] = '\0';
			what = "writing " SOF_IB_DEV_NAME "'s files";
			err = put_ib(&ib, &st->dev);
		}
		if (fd >= 0)
			close(fd);
	}
	if (!err) {
		what = DEV_DIR "/rdma_cm";
		err = put_rdma_cm();
	}
	if (!err) {
		what = UMAD_CLASS;
		err = put_umad(name, NULL);
	}
	if (!err && ib_present) {
		char issm[PATH_MAX];

		issm_fifo(st->pid, issm, sizeof(issm));
		err = put_umad(SOF_IB_DEV_NAME, issm);
	}
	if (err) {
		run_without(what, err);
		return 0;
	}
	soft_ns_seal();
	return 0;
}
