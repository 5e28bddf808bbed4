/*
 * softofed-ipoib: IPoIB datagram mode (RFC 4391) over an InfiniBand port
 * of the daemon, as a TUN interface. Started by `softofed ipoib up`
 * (tools/ipoib.c) in the host's network namespace:
 *
 *   softofed-ipoib [--dev sofib0] [--port 1] [--pkey P] [--ifname ib0]
 *                  [--mode datagram|connected]
 *
 * Order of things: the port must be Active with an SM; the partition's
 * broadcast group is joined (its Q_Key and MTU are the interface's); then
 * the UD QP, the TUN interface (IFF_TUN, no packet information: the
 * kernel hands IP packets, resolution is ours) with the MTU set and up.
 * One loop polls the TUN descriptor, the completion channel, the umad
 * descriptor and the control socket (abstract "softofed/ipoib/IFNAME",
 * one line: STATUS, DOWN, or NEIGH DST SRC and PKEY for the RDMA CM).
 * SIGTERM leaves the groups and exits.
 *
 * The process runs at nice NICE (where it may: root, CAP_SYS_NICE),
 * before the verbs library starts its progress thread, which inherits
 * it: the kernel's ipoib and a veth's packets run in softirq, ahead of
 * every task; here an echo's hops each woke a thread that then waited
 * for a CPU behind busy tasks of the same priority (traced at load 5-6:
 * a reply read by the progress thread that was preempted by a spinning
 * benchmark at once and got the CPU back 8 ms later). It only runs when
 * packets come, so the priority costs nothing when idle (as the
 * fabric's --nice, fabric/main.c). With the scheduler's autogroups
 * (/proc/sys/kernel/sched_autogroup_enabled, on in Debian's kernels) a
 * nice value only counts inside the session's group, and `softofed ipoib
 * up` starts this process in a session of its own (setsid): the group's
 * nice (/proc/self/autogroup) is set too when the session is ours.
 */
#include "ipoib.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <infiniband/verbs.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_ADDRS 32
/* the scheduling priority of the data path (see the top) */
#define NICE (-10)

struct ipoib ipoib;

static struct {
	const char *dev, *ifname;
	int port;
	uint16_t pkey;
	int tun, ctl;
	volatile sig_atomic_t stop;
	int bcast_status; /* 1 while the broadcast join runs */
	struct ipoib_ud_info info;
	uint8_t addrs[MAX_ADDRS][16];
	uint8_t bcast4[MAX_ADDRS][4];
	unsigned naddrs, nbcast4;
	bool connected;	   /* --mode connected (RFC 4755, cm.c) */
	uint64_t addrs_at; /* when addrs_refresh last ran */
} m = {.dev = "sofib0", .ifname = "ib0", .port = 1, .pkey = 0xffff, .tun = -1, .ctl = -1};

uint64_t ipoib_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void ipoib_log(const char *fmt, ...)
{
	va_list ap;
	struct timespec now;
	char ts[32];

	clock_gettime(CLOCK_REALTIME, &now);
	strftime(ts, sizeof(ts), "%H:%M:%S", gmtime(&now.tv_sec));
	fprintf(stderr, "%s.%03ld ipoib %s: ", ts, now.tv_nsec / 1000000, m.ifname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
}

/* ---- the interface's addresses ---------------------------------------------------- */

static void addrs_refresh(void)
{
	struct ifaddrs *ifa, *i;

	m.addrs_at = ipoib_now_ms();
	if (getifaddrs(&ifa))
		return;
	m.naddrs = m.nbcast4 = 0;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || strcmp(i->ifa_name, m.ifname) || m.naddrs == MAX_ADDRS)
			continue;
		if (i->ifa_addr->sa_family == AF_INET) {
			const struct sockaddr_in *a = (const void *)i->ifa_addr;
			uint8_t *d = m.addrs[m.naddrs++];

			memset(d, 0, 10);
			d[10] = d[11] = 0xff;
			memcpy(d + 12, &a->sin_addr, 4);
			if (i->ifa_netmask) {
				uint32_t mask =
				    ((const struct sockaddr_in *)(const void *)i->ifa_netmask)
					->sin_addr.s_addr;
				uint32_t b = a->sin_addr.s_addr | ~mask;

				if (mask != 0xffffffffu)
					memcpy(m.bcast4[m.nbcast4++], &b, 4);
			}
		} else if (i->ifa_addr->sa_family == AF_INET6) {
			const struct sockaddr_in6 *a = (const void *)i->ifa_addr;

			memcpy(m.addrs[m.naddrs++], &a->sin6_addr, 16);
		}
	}
	freeifaddrs(ifa);
}

static bool local_addr_known(const uint8_t ip[16])
{
	for (unsigned i = 0; i < m.naddrs; i++)
		if (!memcmp(m.addrs[i], ip, 16))
			return true;
	return false;
}

/* An ARP request or NS for an address the list (read each second) does
 * not hold yet reads it again, at most every 100 ms: an address added
 * just after `up` is answered at once, not a second later. */
bool ipoib_local_addr(const uint8_t ip[16])
{
	if (local_addr_known(ip))
		return true;
	if (ipoib_now_ms() - m.addrs_at < 100)
		return false;
	addrs_refresh();
	return local_addr_known(ip);
}

bool ipoib_addr(unsigned i, uint8_t ip[16])
{
	if (i >= m.naddrs)
		return false;
	memcpy(ip, m.addrs[i], 16);
	return true;
}

bool ipoib_local_bcast4(const uint8_t ip[4])
{
	for (unsigned i = 0; i < m.nbcast4; i++)
		if (!memcmp(m.bcast4[i], ip, 4))
			return true;
	return false;
}

/* ---- the receive path's actions ---------------------------------------------------- */

static void tun_write(const struct virtio_net_hdr *vh, const uint8_t *pkt, size_t len)
{
	struct iovec iov[2] = {{(void *)vh, sizeof(*vh)}, {(void *)pkt, len}};

	/* the kernel refused it (no address yet, no memory): a lost
	 * packet, counted (a full socket buffer behind the interface is the
	 * kernel's count: Udp RcvbufErrors) */
	if (writev(m.tun, iov, 2) < 0)
		ipoib.cnt[IC_drop_tun]++;
}

/* through gso.c's joining of TCP segments */
static void deliver(const uint8_t *pkt, size_t len) { ipoib_gro_input(pkt, len); }

static const struct ipoib_ops ops = {
    .deliver = deliver,
    .send_hw = neigh_send_hw,
    .learn = neigh_learn,
    .local_addr = ipoib_local_addr,
};

/* ---- the TUN interface --------------------------------------------------------------- */

static int tun_open(void)
{
	struct ifreq ifr;
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC), s,
	    vnet_len = sizeof(struct virtio_net_hdr);

	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	/* every packet behind a virtio_net_hdr (gso.c): in datagram mode
	 * with the offloads, checksums left to us and TCP up to 64 KiB (TSO),
	 * cut here into datagrams. Not in connected mode: its 65520 MTU
	 * gives TCP packets of that size already, and the kernel sums them
	 * as it copies them, where we would take another pass over the data
	 * (measured: 15 % more of ipoib's CPU per MB, bench/ipoib_ab.sh). The
	 * receive side's joining needs no offload: the kernel takes GSO
	 * packets written to any TUN with the header. */
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI | IFF_VNET_HDR;
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", m.ifname);
	if (ioctl(fd, TUNSETIFF, &ifr) || ioctl(fd, TUNSETVNETHDRSZ, &vnet_len) ||
	    ioctl(fd, TUNSETOFFLOAD,
		  ipoib.connected ? 0u : (unsigned)(TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6))) {
		int err = -errno;

		close(fd);
		return err;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ifr.ifr_mtu = (int)ipoib.mtu;
	if (s < 0 || ioctl(s, SIOCSIFMTU, &ifr))
		ipoib_log("MTU %u: %s", ipoib.mtu, strerror(errno));
	ifr.ifr_qlen = 1000;
	if (s >= 0)
		ioctl(s, SIOCSIFTXQLEN, &ifr);
	if (s >= 0 && !ioctl(s, SIOCGIFFLAGS, &ifr)) {
		ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
		if (ioctl(s, SIOCSIFFLAGS, &ifr))
			ipoib_log("up: %s", strerror(errno));
	}
	if (s >= 0)
		close(s);
	return fd;
}

/* ---- the control socket ------------------------------------------------------------- */

static int ctl_open(void)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int n = snprintf(sun.sun_path + 1, sizeof(sun.sun_path) - 1, "softofed/ipoib/%s", m.ifname);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sun,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) ||
	    listen(fd, 8)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static size_t status_text(char *buf, size_t len)
{
	char gid[64], l2[128];
	uint8_t hw[IPOIB_HW_LEN];
	size_t off;
	const struct sa_mcm *b = mcast_bcast();

	ipoib_hw_put(hw, &ipoib.hw);
	for (int i = 0; i < IPOIB_HW_LEN; i++)
		snprintf(l2 + 3 * i, sizeof(l2) - 3 * (size_t)i, "%02x%s", hw[i],
			 i + 1 < IPOIB_HW_LEN ? ":" : "");
	ipoib_gid_str(ipoib.hw.gid, gid, sizeof(gid));
	off = (size_t)snprintf(
	    buf, len,
	    "ipoib %s device %s port %d pkey 0x%04x mode %s mtu %u state up\n"
	    "hwaddr %s\nqpn 0x%06x lid %u gid %s qkey 0x%x bcast_mlid 0x%04x\ncounters:",
	    m.ifname, m.dev, m.port, ipoib.pkey, ipoib.connected ? "connected" : "datagram",
	    ipoib.mtu, l2, ipoib.hw.qpn, ipoib.lid, gid, ipoib.qkey, b ? b->mlid : 0);
	for (int i = 0; i < IC_NR && off + 64 < len; i++)
		off += (size_t)snprintf(buf + off, len - off, " %s %llu", ipoib_cnt_names[i],
					(unsigned long long)ipoib.cnt[i]);
	off += (size_t)snprintf(buf + off, len - off, "\n");
	neigh_dump(buf + off, len - off);
	off += strnlen(buf + off, len - off);
	mcast_dump(buf + off, len - off);
	off += strnlen(buf + off, len - off);
	cm_dump(buf + off, len - off);
	off += strnlen(buf + off, len - off);
	return off;
}

/* An address of the control socket's text: IPv4 (mapped) or IPv6. */
static bool ip_parse(const char *s, uint8_t ip[16])
{
	static const uint8_t pfx4[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	if (inet_pton(AF_INET, s, ip + 12) == 1) {
		memcpy(ip, pfx4, 12);
		return true;
	}
	return inet_pton(AF_INET6, s, ip) == 1;
}

/* "NEIGH DST SRC": "neigh ready QPN GID", "neigh incomplete" (asked
 * again later), "neigh failed" or "neigh bad request". */
static size_t neigh_text(char *req, char *buf, size_t len)
{
	char *save = NULL, *d = strtok_r(req, " \n", &save), *sa = strtok_r(NULL, " \n", &save);
	uint8_t dst[16], src[16];
	struct ipoib_hw hw;
	char gid[64];
	int r;

	if (!d || !sa || !ip_parse(d, dst) || !ip_parse(sa, src))
		return (size_t)snprintf(buf, len, "neigh bad request\n");
	r = neigh_query(dst, src, &hw);
	if (r < 0)
		return (size_t)snprintf(buf, len, "neigh failed\n");
	if (!r)
		return (size_t)snprintf(buf, len, "neigh incomplete\n");
	ipoib_gid_str(hw.gid, gid, sizeof(gid));
	return (size_t)snprintf(buf, len, "neigh ready 0x%06x %s\n", hw.qpn, gid);
}

static void ctl_accept(void)
{
	static char buf[131072];
	char req[64];
	int fd = accept4(m.ctl, NULL, NULL, SOCK_CLOEXEC);
	struct pollfd p;
	ssize_t n;
	size_t len;

	if (fd < 0)
		return;
	p = (struct pollfd){.fd = fd, .events = POLLIN};
	n = poll(&p, 1, 1000) == 1 ? read(fd, req, sizeof(req) - 1) : -1;
	if (n <= 0) {
		close(fd);
		return;
	}
	req[n] = '\0';
	if (!strncmp(req, "DOWN", 4)) {
		m.stop = 1;
		len = (size_t)snprintf(buf, sizeof(buf), "ipoib %s going down\n", m.ifname);
	} else if (!strncmp(req, "STATUS", 6)) {
		len = status_text(buf, sizeof(buf));
	} else if (!strncmp(req, "NEIGH ", 6)) {
		len = neigh_text(req + 6, buf, sizeof(buf));
	} else if (!strncmp(req, "PKEY", 4)) {
		/* the RDMA CM's partition for our addresses (as the kernel's
		 * takes bytes 8-9 of the netdev's broadcast address) */
		len = (size_t)snprintf(buf, sizeof(buf), "pkey 0x%04x\n", ipoib.pkey);
	} else {
		len = (size_t)snprintf(buf, sizeof(buf), "unknown request\n");
	}
	if (write(fd, buf, len) < 0) {
		/* the asker went away */
	}
	close(fd);
}

/* ---- start and loop --------------------------------------------------------------- */

static void bcast_done(int status) { m.bcast_status = status; }

static void on_signal(int sig)
{
	(void)sig;
	m.stop = 1;
}

static int parse(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--dev") && v)
			m.dev = v;
		else if (!strcmp(a, "--port") && v)
			m.port = atoi(v);
		else if (!strcmp(a, "--ifname") && v && strlen(v) < IFNAMSIZ)
			m.ifname = v;
		else if (!strcmp(a, "--mode") && v &&
			 (!strcmp(v, "connected") || !strcmp(v, "datagram")))
			m.connected = !strcmp(v, "connected"); /* /sys/class/net/ib0/mode's words */
		else if (!strcmp(a, "--pkey") && v) {
			unsigned long p = strtoul(v, NULL, 0);

			if (!(p & 0x7fff) || p > 0xffff)
				return -1;
			m.pkey = (uint16_t)p;
		} else
			return -1;
		i++;
	}
	return m.port >= 1 ? 0 : -1;
}

/* Wait for the port to be Active with an SM, then join the broadcast group. */
static int start(void)
{
	uint64_t deadline = ipoib_now_ms() + 30000;
	uint32_t qpn;
	int err, bmtu;

	err = ud_open(m.dev, m.port, m.pkey, &m.info);
	if (err) {
		ipoib_log("device %s port %d, P_Key 0x%04x: %s", m.dev, m.port, m.pkey,
			  strerror(-err));
		return err;
	}
	while ((m.info.port_state != IBV_PORT_ACTIVE || !m.info.sm_lid) && !m.stop &&
	       ipoib_now_ms() < deadline) {
		usleep(100000);
		ud_query(&m.info);
	}
	if (m.info.port_state != IBV_PORT_ACTIVE || !m.info.sm_lid) {
		ipoib_log("port %d of %s is not Active with an SM", m.port, m.dev);
		return -ENETDOWN;
	}
	ipoib.ops = &ops;
	ipoib_gro_init(tun_write);
	ipoib.pkey = m.pkey | 0x8000;
	ipoib.lid = m.info.lid;
	memcpy(ipoib.hw.gid, m.info.gid, 16);
	ipoib.mtu = (uint32_t)m.info.ib_mtu - IPOIB_HDR_LEN;
	err = sa_open(m.dev, m.port, m.info.gid, ipoib.pkey);
	if (err) {
		ipoib_log("SA client: %s", strerror(-err));
		return err;
	}
	sa_set_sm(m.info.sm_lid, m.info.sm_sl, false);
	m.bcast_status = 1;
	if (mcast_start(bcast_done))
		return -EIO;
	while (m.bcast_status == 1 && !m.stop && ipoib_now_ms() < deadline + 15000) {
		struct pollfd p = {.fd = sa_fd(), .events = POLLIN};

		if (poll(&p, 1, 100) > 0)
			sa_poll();
	}
	if (m.bcast_status) {
		ipoib_log("broadcast group: not joined (%d)", m.bcast_status);
		return -ENETDOWN;
	}
	ipoib.qkey = mcast_bcast()->qkey;
	/* RFC 4391 section 5: the broadcast group's MTU bounds the link's */
	bmtu = 128 << mcast_bcast()->mtu;
	if (bmtu < m.info.ib_mtu)
		ipoib.mtu = (uint32_t)bmtu - IPOIB_HDR_LEN;
	err = ud_start(ipoib.qkey, &qpn);
	if (err) {
		ipoib_log("UD QP: %s", strerror(-err));
		return err;
	}
	ipoib.hw.qpn = qpn;
	if (!mcast_bcast_ah())
		return -EIO;
	ipoib.ud_mtu = ipoib.mtu;
	if (m.connected) {
		err = cm_start(m.dev);
		if (err) {
			ipoib_log("connected mode: %s", strerror(-err));
			return err;
		}
		ipoib.connected = true;
		ipoib.hw.flags = IPOIB_HW_C;
		ipoib.mtu = IPOIB_CM_MTU;
	}
	m.tun = tun_open();
	if (m.tun < 0) {
		ipoib_log("TUN %s: %s", m.ifname, strerror(-m.tun));
		return m.tun;
	}
	m.ctl = ctl_open();
	if (m.ctl < 0) {
		ipoib_log("control socket: %s (another ipoib on %s?)", strerror(-m.ctl), m.ifname);
		return m.ctl;
	}
	ipoib_log("up: device %s port %d lid %u qpn 0x%06x pkey 0x%04x qkey 0x%x mtu %u", m.dev,
		  m.port, ipoib.lid, qpn, ipoib.pkey, ipoib.qkey, ipoib.mtu);
	return 0;
}

static void tick(uint64_t now)
{
	static uint64_t last_sec;

	neigh_tick(now);
	mcast_tick(m.ifname, now);
	cm_tick(now);
	if (now - last_sec < 1000)
		return;
	last_sec = now;
	addrs_refresh();
	/* the SM may move (a restart, a handover): follow its LID */
	if (!ud_query(&m.info)) {
		sa_set_sm(m.info.sm_lid, m.info.sm_sl, false);
		ipoib.lid = m.info.lid;
	}
}

/* The port's events (the kernel's ipoib_event): a new SM, a new LID, or
 * an SM that asks its clients to register again (PortInfo
 * ClientReregister, IBA 14.4.11: set by an SM that restarted, even on
 * the same LID) may mean an SA that forgot our joins or takes others:
 * its ClassPortInfo is asked again, then every group joined again. */
static void port_events(void)
{
	struct ibv_async_event ev;

	while (!ibv_get_async_event(ud_ctx(), &ev)) {
		enum ibv_event_type t = ev.event_type;

		ibv_ack_async_event(&ev);
		if (t != IBV_EVENT_SM_CHANGE && t != IBV_EVENT_CLIENT_REREGISTER &&
		    t != IBV_EVENT_LID_CHANGE)
			continue;
		ipoib_log("port event: %s", ibv_event_type_str(t));
		ipoib.cnt[IC_port_events]++;
		if (!ud_query(&m.info)) {
			ipoib.lid = m.info.lid;
			sa_set_sm(m.info.sm_lid, m.info.sm_sl, true);
		}
	}
}

/* A packet from the kernel: its offloads done (gso.c), each packet or
 * segment to ipoib_output. */
static void from_kernel(uint8_t *pkt, size_t len, const struct virtio_net_hdr *vh)
{
	if (len < 20 || ipoib_tx_offload(pkt, len, vh, neigh_tx_mtu(pkt, len), ipoib_output))
		ipoib.cnt[IC_tx_drop_vnet]++;
}

/* Room for one more packet from the kernel: a TSO packet cut into
 * datagrams takes up to 33 send slots (64 KiB in 1992-byte segments). */
static bool tx_room(void) { return ud_sq_free() > 40 && cm_sq_free() > 8; }

static void loop(void)
{
	/* the encapsulation header's room before each packet read */
	static uint8_t buf[IPOIB_HDR_LEN + 65536];
	uint8_t *pkt = buf + IPOIB_HDR_LEN;
	struct virtio_net_hdr vh;
	struct iovec iov[2] = {{&vh, sizeof(vh)}, {pkt, sizeof(buf) - IPOIB_HDR_LEN}};
	uint64_t last = 0;

	while (!m.stop) {
		/* backpressure: no packet is taken from the kernel while the
		 * send queue is full (its queue holds them, or drops and
		 * counts); the completions that free it wake the loop */
		struct pollfd p[7] = {{.fd = m.tun},
				      {.fd = ud_fd(), .events = POLLIN},
				      {.fd = sa_fd(), .events = POLLIN},
				      {.fd = m.ctl, .events = POLLIN},
				      {.fd = ud_ctx()->async_fd, .events = POLLIN}};
		uint64_t now;

		/* what the last pass gathered goes out before the wait */
		ud_flush();
		/* (connected mode's send completions are read here when slots
		 * are short, before the room is judged) */
		cm_fds(&p[5]);
		p[0].events = tx_room() ? POLLIN : 0;
		if (poll(p, 7, 100) < 0 && errno != EINTR)
			break;
		/* the CQs are polled after their channels' events (no read of
		 * an empty channel when the TUN woke us: an echo's first hop) */
		if (p[1].revents)
			ud_poll();
		if (p[5].revents || p[6].revents)
			cm_poll();
		ipoib_gro_flush();
		if (p[0].revents) {
			for (int n = 0; n < 64 && tx_room(); n++) {
				ssize_t r = readv(m.tun, iov, 2);

				if (r < (ssize_t)sizeof(vh))
					break;
				from_kernel(pkt, (size_t)r - sizeof(vh), &vh);
			}
		}
		if (p[2].revents)
			sa_poll();
		if (p[3].revents)
			ctl_accept();
		if (p[4].revents)
			port_events();
		now = ipoib_now_ms();
		if (now - last >= 100) {
			last = now;
			tick(now);
		}
	}
}

/* NICE for this process and, when it leads its session, for the session's
 * autogroup (see the top); without the privilege what was inherited stays */
static void raise_priority(void)
{
	FILE *f;
	int bad;

	if (setpriority(PRIO_PROCESS, 0, NICE))
		ipoib_log("nice %d: %s (the inherited priority stays)", NICE, strerror(errno));
	if (getsid(0) != getpid())
		return;
	f = fopen("/proc/self/autogroup", "w");
	if (!f)
		return; /* no autogroups in this kernel */
	bad = fprintf(f, "%d", NICE) < 0;
	if (fclose(f) || bad)
		ipoib_log("autogroup nice %d: %s", NICE, strerror(errno));
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = on_signal};
	int err;

	if (parse(argc, argv)) {
		fprintf(stderr, "usage: softofed-ipoib [--dev DEV] [--port N] [--pkey P] "
				"[--ifname NAME] [--mode datagram|connected]\n");
		return 2;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	raise_priority();
	err = start();
	if (!err) {
		addrs_refresh();
		loop();
		ipoib_log("down");
	}
	mcast_stop();
	/* let the leaves go out */
	for (int i = 0; i < 5 && sa_fd() >= 0; i++) {
		struct pollfd p = {.fd = sa_fd(), .events = POLLIN};

		if (poll(&p, 1, 20) > 0)
			sa_poll();
	}
	cm_stop();
	neigh_flush();
	sa_close();
	ud_close();
	if (m.tun >= 0)
		close(m.tun);
	if (m.ctl >= 0)
		close(m.ctl);
	return err ? 1 : 0;
}
