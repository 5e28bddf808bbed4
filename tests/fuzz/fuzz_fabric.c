/*
 * libFuzzer target: the fabric process's input from a real host's link
 * (fabric/): datagrams from an attached host H1 of line3 (H1 - S1 - S2 -
 * S3 with H2, H3 simulated) through fab_udp_input and the packet queue
 * (fab_run): the link checks, switches' forwarding and directed-route
 * steps, the simulated nodes' SMA and PMA, SOFL messages.
 *
 * Input: up to 8 records [len (2 bytes)] [flags] [bytes]; flags bit 0
 * "seal": the harness sets PktLen and computes ICRC and VCRC, so that the
 * fuzzer reaches past the link checks; bit 1 sends from an unknown
 * address; bit 2 makes the record a UDP GRO datagram (a host's GSO run,
 * fab_udp_datagram): its first 2 bytes are the segment size, the rest the
 * datagram, and "seal" seals each segment. A fresh fabric per input.
 * Checks: the queue always drains; a record that fails the link checks is
 * counted as exactly one bad packet; a GRO datagram is cut into exactly
 * ceil(length / segment) packets; every port state stays valid. When
 * the first record's flags have bit 3, the fabric runs with its direct
 * paths (direct.c: routes published after each record, a host's SOFL
 * COUNT records taken into the counters; costly, hence not always).
 *
 * tests/fuzz/run.sh builds it from the files on these lines:
 * FUZZ_SOURCES: tests/fuzz/fuzz_fabric.c fabric/topo.c fabric/pkt.c fabric/fabric.c fabric/node.c fabric/link.c fabric/sim.c fabric/capture.c fabric/direct.c mad/sma.c mad/sma_port.c mad/pma.c mad/cc.c transport/ib_wire.c transport/icrc.c common/util.c
 * FUZZ_INCLUDES: fabric mad transport common
 */
#include "fabric.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "fuzz_fabric: " __VA_ARGS__);                                      \
		fputc('\n', stderr);                                                               \
		abort();                                                                           \
	} while (0)

static const char line3[] = "Hca 1 \"H1\"\n[1] \"S1\"[1]\n\n"
			    "Switch 8 \"S1\"\n[1] \"H1\"[1]\n[2] \"S2\"[2]\n\n"
			    "Switch 8 \"S2\"\n[1] \"H2\"[1]\n[2] \"S1\"[2]\n[3] \"S3\"[2]\n\n"
			    "Switch 8 \"S3\"\n[1] \"H3\"[1]\n[2] \"S2\"[3]\n\n"
			    "Hca 1 \"H2\"\n[1] \"S2\"[1]\n\nHca 1 \"H3\"\n[1] \"S3\"[1]\n";

static struct topo topo;

static void load(void)
{
	char path[] = "/tmp/fuzz_fabric.XXXXXX";
	int fd;

	if (topo.nnodes)
		return;
	fd = mkstemp(path);
	if (fd < 0 || write(fd, line3, sizeof(line3) - 1) != (ssize_t)(sizeof(line3) - 1))
		FAIL("temp file");
	close(fd);
	if (topo_load(&topo, path))
		FAIL("line3 does not load");
	unlink(path);
}

static uint64_t bad_total(const struct fabric *f)
{
	uint64_t t = 0;

	for (int i = 0; i < FAB_BAD_MAX; i++)
		t += f->st.bad[i];
	return t;
}

/* A GRO record: [seg (2 bytes)] [datagram]; seal: each segment sealed. */
static void gro_record(struct fabric *f, const uint8_t *data, size_t len, bool seal,
		       const struct sockaddr_in *src)
{
	static uint8_t dg[65536];
	struct sockaddr_storage from;
	size_t seg, want;
	unsigned n;

	if (len < 2)
		return;
	seg = (size_t)(data[0] << 8 | data[1]);
	len -= 2;
	memcpy(dg, data + 2, len);
	if (seal && seg >= FAB_LRH_LEN + FAB_BTH_LEN + FAB_ICRC_LEN + FAB_VCRC_LEN)
		for (size_t off = 0; off < len; off += seg) {
			size_t l = len - off < seg ? len - off : seg;

			if (l < FAB_LRH_LEN + FAB_BTH_LEN + FAB_ICRC_LEN + FAB_VCRC_LEN ||
			    l % 4 != 2)
				continue;
			dg[off] &= 0xf0;
			sof_put16(dg + off + 4, (uint16_t)((l - FAB_VCRC_LEN) / 4));
			fab_pkt_seal(dg + off, l);
		}
	memset(&from, 0, sizeof(from));
	memcpy(&from, src, sizeof(*src));
	n = fab_udp_datagram(f, dg, len, seg, &from, sizeof(*src));
	want = !seg || seg >= len ? 1 : (len + seg - 1) / seg;
	if (n != want)
		FAIL("a GRO datagram of %zu bytes, segments of %zu: %u packets, not %zu", len, seg,
		     n, want);
	fab_run(f);
	if (f->qlen || f->qhead)
		FAIL("the queue did not drain");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *real[] = {(char *)"H1"};
	struct sockaddr_in h1 = {.sin_family = AF_INET, .sin_port = htons(9)};
	struct sockaddr_in other = {.sin_family = AF_INET, .sin_port = htons(10)};
	struct sockaddr_storage from;
	struct fabric f;
	struct fab_node *n;
	int records = 0;

	load();
	if (fab_build(&f, &topo, real, 1))
		FAIL("no fabric");
	h1.sin_addr.s_addr = htonl(0x7f000001);
	other.sin_addr.s_addr = htonl(0x7f000002);
	n = fab_find(&f, "H1");
	memcpy(&n->host.addr, &h1, sizeof(h1));
	n->host.addrlen = sizeof(h1);
	n->host.attached = true;
	n->host.phys = SOF_PHYS_LINKUP;
	n->host.last_hello = fab_now();
	fab_link_update(&f, n, 1);
	fab_run(&f);
	if (size >= 3 && (data[2] & 8) && fab_direct_open(&f))
		FAIL("no direct paths");
	fab_direct_publish(&f);

	while (size >= 3 && records++ < 8) {
		size_t len = (size_t)(data[0] << 8 | data[1]);
		uint8_t flags = data[2], pkt[FAB_MAX_PKT];
		uint64_t before_bad, before_pkts;

		if (flags & 4) {
			data += 3;
			size -= 3;
			if (len > size)
				len = size;
			gro_record(&f, data, len, flags & 1, (flags & 2) ? &other : &h1);
			data += len;
			size -= len;
			continue;
		}

		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		if (len > sizeof(pkt))
			len = sizeof(pkt);
		memcpy(pkt, data, len);
		data += len;
		size -= len;
		if ((flags & 1) && len >= FAB_LRH_LEN + FAB_BTH_LEN + FAB_ICRC_LEN + FAB_VCRC_LEN &&
		    len % 4 == 2) {
			pkt[0] &= 0xf0;
			sof_put16(pkt + 4, (uint16_t)((len - FAB_VCRC_LEN) / 4));
			fab_pkt_seal(pkt, len);
		}
		memset(&from, 0, sizeof(from));
		memcpy(&from, (flags & 2) ? &other : &h1, sizeof(h1));
		before_bad = bad_total(&f);
		before_pkts = f.st.pkts;
		fab_udp_input(&f, pkt, len, &from, sizeof(h1));
		fab_run(&f);
		fab_direct_publish(&f);
		if (f.qlen || f.qhead)
			FAIL("the queue did not drain");
		if (!(flags & 2) && !ib_is_sofl(pkt, len) && f.st.pkts > before_pkts) {
			struct ib_lrh l;
			bool good = len <= FAB_MAX_PKT && fab_pkt_check(pkt, len, &l) == FAB_OK;

			if (!good && bad_total(&f) != before_bad + 1)
				FAIL("a bad datagram counted %llu times",
				     (unsigned long long)(bad_total(&f) - before_bad));
		}
	}
	for (unsigned i = 0; i < f.nnodes; i++)
		for (unsigned p = 0; p <= f.nodes[i]->m->nports; p++) {
			const struct sof_port *mp = &f.nodes[i]->m->port[p];

			if (mp->state < SOF_PORT_DOWN || mp->state > SOF_PORT_ACTIVE)
				FAIL("%s port %u state %u", f.nodes[i]->name, p, mp->state);
		}
	fab_direct_close(&f);
	fab_free(&f);
	return 0;
}
