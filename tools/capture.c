/*
 * `softofed capture`: a pcap of the IB packets crossing the fabric's
 * links, taken by the fabric of this network namespace (fabric/capture.c)
 * and written here, with this user's rights; and two things to do with
 * such a file:
 *
 *   softofed capture -w FILE [-c COUNT] [-t SECS] [--erf] [NAME PORT]
 *   softofed capture check FILE [-v]
 *   softofed capture erf IN OUT
 *
 * The capture file is LINKTYPE_INFINIBAND (247): each record one packet,
 * LRH through VCRC. Wireshark reads 247 from 4.2 on; 4.0 (Debian 12)
 * knows no LINKTYPE for InfiniBand but decodes ERF records of type 21
 * (TYPE_INFINIBAND) in LINKTYPE_ERF (197), which --erf (or `erf IN OUT`
 * afterwards) writes: the same packets behind a 16-byte ERF header.
 * `check` verifies every record as a port would (LVer, PktLen, VCRC,
 * IBA 7.7.8, 7.8.2) and its ICRC (IBA 7.8.1), counts packets by kind
 * (SMP, SA, PerfMgt, CM, other MADs, RC, UC, UD, raw) and exits 1 when
 * any is bad.
 */
#include "softofed.h"

#include "ib_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define FABRIC_CTL "softofed/fabric"
#define PCAP_MAGIC_US 0xa1b2c3d4u
#define PCAP_MAGIC_NS 0xa1b23c4du
#define LINKTYPE_INFINIBAND 247u
#define LINKTYPE_ERF 197u
#define ERF_TYPE_INFINIBAND 21u
#define ERF_HDR_LEN 16u
#define ERF_FLAG_VLEN 0x04u /* varying record length: no padding */
#define REC_MAX 70000u

static uint32_t get32le(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void put32le(uint8_t *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static void pcap_header(uint8_t h[24], uint32_t linktype)
{
	put32le(h, PCAP_MAGIC_NS);
	h[4] = 2;
	h[5] = 0;
	h[6] = 4;
	h[7] = 0;
	put32le(h + 8, 0);
	put32le(h + 12, 0);
	put32le(h + 16, 65535);
	put32le(h + 20, linktype);
}

/* A pcap record (16-byte header hdr, pkt) as an ERF record of type 21 in
 * LINKTYPE_ERF: the record's header and the ERF header into out (32
 * bytes), the packet follows unchanged. ns: the file's timestamps are in
 * nanoseconds. */
static void erf_wrap(const uint8_t hdr[16], uint32_t len, bool ns, uint8_t out[32])
{
	uint32_t sec = get32le(hdr), sub = get32le(hdr + 4);
	uint64_t frac = ((uint64_t)sub << 32) / (ns ? 1000000000u : 1000000u);
	uint64_t ts = (uint64_t)sec << 32 | (frac & 0xffffffffu);

	memcpy(out, hdr, 8);
	put32le(out + 8, ERF_HDR_LEN + len);
	put32le(out + 12, ERF_HDR_LEN + len);
	for (int i = 0; i < 8; i++) /* ERF: little-endian 32.32 fixed point */
		out[16 + i] = (uint8_t)(ts >> (8 * i));
	out[24] = ERF_TYPE_INFINIBAND;
	out[25] = ERF_FLAG_VLEN;
	out[26] = (uint8_t)((ERF_HDR_LEN + len) >> 8); /* rlen, big-endian */
	out[27] = (uint8_t)(ERF_HDR_LEN + len);
	out[28] = 0; /* lctr */
	out[29] = 0;
	out[30] = (uint8_t)(len >> 8); /* wlen */
	out[31] = (uint8_t)len;
}

static bool read_full(FILE *in, void *buf, size_t n) { return fread(buf, 1, n, in) == n; }

/* ---- capture -------------------------------------------------------------- */

/* SIGINT / SIGTERM end a capture as its count or time would: the read
 * under way fails with EINTR, the records written so far stay whole. */
static void on_stop(int sig) { (void)sig; }

static int capture_usage(void)
{
	fprintf(stderr,
		"usage: softofed capture -w FILE|- [-c COUNT] [-t SECS] [--erf] [NAME PORT]\n"
		"       softofed capture check FILE [-v]\n"
		"       softofed capture erf IN OUT\n");
	return 2;
}

static int capture(int argc, char **argv)
{
	const char *out = NULL, *name = NULL, *port = NULL;
	unsigned long long count = 10000;
	unsigned secs = 30;
	bool erf = false, ns;
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	socklen_t sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(FABRIC_CTL));
	char req[160], line[200];
	uint8_t h[24], *rec = NULL;
	unsigned long long n = 0;
	size_t got = 0;
	FILE *in = NULL, *o;
	int fd, rc = 1;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-w") && i + 1 < argc)
			out = argv[++i];
		else if (!strcmp(argv[i], "-c") && i + 1 < argc)
			count = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-t") && i + 1 < argc)
			secs = (unsigned)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--erf"))
			erf = true;
		else if (argv[i][0] != '-' && !name)
			name = argv[i];
		else if (argv[i][0] != '-' && !port)
			port = argv[i];
		else
			return capture_usage();
	}
	if (!out || (name && !port))
		return capture_usage();
	snprintf(req, sizeof(req), "CAPTURE %llu %u%s%s%s%s\n", count, secs, name ? " " : "",
		 name ? name : "", port ? " " : "", port ? port : "");
	memcpy(sun.sun_path + 1, FABRIC_CTL, strlen(FABRIC_CTL));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sl)) {
		fprintf(stderr, "softofed capture: no fabric answers in this network namespace\n");
		return 1;
	}
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req))
		goto out;
	/* the answer's first line, then (on "ok") the pcap stream */
	while (got < sizeof(line) - 1 && read(fd, line + got, 1) == 1 && line[got] != '\n')
		got++;
	line[got] = '\0';
	if (strcmp(line, "ok capture")) {
		fprintf(stderr, "softofed capture: %s\n", got ? line : "no answer");
		goto out;
	}
	in = fdopen(fd, "r");
	if (!in)
		goto out;
	{
		struct sigaction sa = {.sa_handler = on_stop}; /* no SA_RESTART */

		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}
	fd = -1;
	o = strcmp(out, "-") ? NULL : stdout;
	if (!o) {
		int ofd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		o = ofd >= 0 ? fdopen(ofd, "w") : NULL;
		if (!o) {
			fprintf(stderr, "softofed capture: %s: %s\n", out, strerror(errno));
			if (ofd >= 0)
				close(ofd);
			goto out;
		}
	}
	rec = malloc(REC_MAX);
	if (!rec || !read_full(in, h, 24) || get32le(h + 20) != LINKTYPE_INFINIBAND) {
		fprintf(stderr, "softofed capture: bad stream from the fabric\n");
		goto close_out;
	}
	ns = get32le(h) == PCAP_MAGIC_NS;
	if (erf)
		put32le(h + 20, LINKTYPE_ERF);
	fwrite(h, 1, 24, o);
	for (;;) {
		uint8_t rh[16], wrapped[32];
		uint32_t len;

		if (!read_full(in, rh, 16))
			break;
		len = get32le(rh + 8);
		if (len > REC_MAX || !read_full(in, rec, len))
			break;
		if (erf) {
			erf_wrap(rh, len, ns, wrapped);
			fwrite(wrapped, 1, 32, o);
		} else {
			fwrite(rh, 1, 16, o);
		}
		fwrite(rec, 1, len, o);
		n++;
	}
	rc = 0;
	fprintf(stderr, "softofed capture: %llu packets\n", n);
close_out:
	if (o != stdout ? fclose(o) : fflush(o)) {
		fprintf(stderr, "softofed capture: %s: %s\n", out, strerror(errno));
		rc = 1;
	}
out:
	free(rec);
	if (in)
		fclose(in);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* ---- erf IN OUT ------------------------------------------------------------ */

static int to_erf(const char *inp, const char *outp)
{
	FILE *in = fopen(inp, "r"), *o = NULL;
	uint8_t h[24], rh[16], wrapped[32], *rec = malloc(REC_MAX);
	int rc = 1;
	bool ns;

	if (!in || !rec || !read_full(in, h, 24) ||
	    (get32le(h) != PCAP_MAGIC_NS && get32le(h) != PCAP_MAGIC_US) ||
	    get32le(h + 20) != LINKTYPE_INFINIBAND) {
		fprintf(stderr, "softofed capture erf: %s: not a pcap of LINKTYPE 247\n", inp);
		goto out;
	}
	ns = get32le(h) == PCAP_MAGIC_NS;
	o = fopen(outp, "w");
	if (!o) {
		fprintf(stderr, "softofed capture erf: %s: %s\n", outp, strerror(errno));
		goto out;
	}
	pcap_header(h, LINKTYPE_ERF);
	if (!ns)
		put32le(h, PCAP_MAGIC_US);
	fwrite(h, 1, 24, o);
	while (read_full(in, rh, 16)) {
		uint32_t len = get32le(rh + 8);

		if (len > REC_MAX || !read_full(in, rec, len)) {
			fprintf(stderr, "softofed capture erf: %s: truncated\n", inp);
			goto out;
		}
		erf_wrap(rh, len, ns, wrapped);
		fwrite(wrapped, 1, 32, o);
		fwrite(rec, 1, len, o);
	}
	rc = 0;
out:
	if (o && fclose(o))
		rc = 1;
	if (in)
		fclose(in);
	free(rec);
	return rc;
}

/* ---- check FILE ------------------------------------------------------------ */

enum kind { K_SMP, K_SA, K_PERF, K_CM, K_MAD, K_RC, K_UC, K_UD, K_RAW, K_OTHER, K_MAX };
static const char *const kind_names[K_MAX] = {
    [K_SMP] = "smp", [K_SA] = "sa", [K_PERF] = "perf", [K_CM] = "cm",	[K_MAD] = "mad",
    [K_RC] = "rc",   [K_UC] = "uc", [K_UD] = "ud",     [K_RAW] = "raw", [K_OTHER] = "other",
};
enum bad { B_OK, B_SHORT, B_LVER, B_PKTLEN, B_VCRC, B_ICRC, B_MAX };
static const char *const bad_names[B_MAX] = {
    [B_OK] = "ok",	   [B_SHORT] = "short", [B_LVER] = "lver",
    [B_PKTLEN] = "pktlen", [B_VCRC] = "vcrc",	[B_ICRC] = "icrc",
};

/* IBA 7.7.8 (LVer, PktLen), 7.8.2 (VCRC), 7.8.1 (ICRC of IBA transport
 * packets, LNH 2 and 3) */
static enum bad check_pkt(const uint8_t *p, size_t len, struct ib_lrh *l)
{
	size_t end;

	if (len < IB_LRH_LEN + IB_VCRC_LEN)
		return B_SHORT;
	ib_lrh_read(p, l);
	if (l->lver)
		return B_LVER;
	end = len - IB_VCRC_LEN;
	if ((size_t)l->pktlen * 4 != end)
		return B_PKTLEN;
	if (ib_vcrc(p, end) != (uint16_t)(p[end] | p[end + 1] << 8))
		return B_VCRC;
	if (l->lnh >= IB_LNH_LOCAL) {
		if (end < IB_LRH_LEN + (l->lnh == IB_LNH_GLOBAL ? IB_GRH_LEN : 0) + 12 + 4)
			return B_SHORT;
		if (ib_icrc(p, end - 4) != get32le(p + end - 4))
			return B_ICRC;
	}
	return B_OK;
}

static enum kind classify(const uint8_t *p, size_t len, const struct ib_lrh *l, char *what,
			  size_t wl)
{
	size_t off = IB_LRH_LEN + (l->lnh == IB_LNH_GLOBAL ? IB_GRH_LEN : 0);
	const uint8_t *b = p + off, *mad;
	uint8_t op;
	uint32_t dqp;

	snprintf(what, wl, "raw");
	if (l->lnh < IB_LNH_LOCAL)
		return K_RAW;
	op = b[0];
	dqp = (uint32_t)b[5] << 16 | (uint32_t)b[6] << 8 | b[7];
	snprintf(what, wl, "op 0x%02x qp 0x%06x", op, dqp);
	if (op < 0x20)
		return K_RC;
	if (op >= 0x20 && op < 0x40)
		return K_UC;
	if (op != 0x64 && op != 0x65)
		return K_OTHER;
	if (dqp > 1 || len < off + 12 + 8 + 24 + 6)
		return K_UD;
	mad = b + 12 + 8;
	snprintf(what, wl, "qp%u class 0x%02x method 0x%02x attr 0x%04x", dqp, mad[1], mad[3],
		 (unsigned)mad[16] << 8 | mad[17]);
	switch (mad[1]) {
	case 0x01:
	case 0x81:
		return K_SMP;
	case 0x03:
		return K_SA;
	case 0x04:
		return K_PERF;
	case 0x07:
		return K_CM;
	default:
		return K_MAD;
	}
}

static int check(const char *path, bool verbose)
{
	FILE *in = fopen(path, "r");
	uint8_t h[24], rh[16], *rec = malloc(REC_MAX);
	unsigned long long n = 0, kinds[K_MAX] = {0}, bads[B_MAX] = {0};
	uint32_t lt;
	int rc = 1;

	if (!in || !rec || !read_full(in, h, 24) ||
	    (get32le(h) != PCAP_MAGIC_NS && get32le(h) != PCAP_MAGIC_US)) {
		fprintf(stderr, "softofed capture check: %s: not a pcap file\n", path);
		goto out;
	}
	lt = get32le(h + 20);
	if (lt != LINKTYPE_INFINIBAND && lt != LINKTYPE_ERF) {
		fprintf(stderr, "softofed capture check: %s: LINKTYPE %u, not 247 or 197\n", path,
			lt);
		goto out;
	}
	while (read_full(in, rh, 16)) {
		uint32_t len = get32le(rh + 8);
		const uint8_t *p = rec;
		struct ib_lrh l;
		enum bad bad;
		enum kind k = K_OTHER;
		char what[96] = "";

		if (len > REC_MAX || !read_full(in, rec, len)) {
			fprintf(stderr, "softofed capture check: %s: truncated\n", path);
			goto out;
		}
		n++;
		if (lt == LINKTYPE_ERF) { /* one ERF header, type 21, no extensions */
			if (len < ERF_HDR_LEN || rec[8] != ERF_TYPE_INFINIBAND) {
				bads[B_SHORT]++;
				continue;
			}
			p += ERF_HDR_LEN;
			len -= ERF_HDR_LEN;
		}
		bad = check_pkt(p, len, &l);
		bads[bad]++;
		if (bad == B_OK)
			k = classify(p, len, &l, what, sizeof(what));
		kinds[k]++;
		if (verbose)
			printf("%llu vl %u sl %u lid %u > %u len %u %s %s %s\n", n, l.vl, l.sl,
			       l.slid, l.dlid, len, bad == B_OK ? kind_names[k] : "-", what,
			       bad_names[bad]);
	}
	printf("packets %llu", n);
	for (int b = 0; b < B_MAX; b++)
		printf(" %s %llu", bad_names[b], bads[b]);
	printf("\n");
	for (int k = 0; k < K_MAX; k++)
		printf("%s%s %llu", k ? " " : "", kind_names[k], kinds[k]);
	printf("\n");
	rc = bads[B_OK] == n ? 0 : 1;
out:
	if (in)
		fclose(in);
	free(rec);
	return rc;
}

int soft_cmd_capture(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[0], "check"))
		return check(argv[1], argc >= 3 && !strcmp(argv[2], "-v"));
	if (argc == 3 && !strcmp(argv[0], "erf"))
		return to_erf(argv[1], argv[2]);
	return capture(argc, argv);
}
