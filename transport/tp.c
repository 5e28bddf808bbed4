/*
 * The engine's global state and its start: the host's ops and the port it
 * runs on, the counters, the log and tracing, the GID look-up through the
 * host, and the hooks' sends (tp.h).
 */
#include "tport.h"

#include "sof_gid.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/timerfd.h>

struct tp_state tp;
bool tp_tracing;

static int start(const struct tp_host_ops *host, int fd4, int fd6, bool tx, uint64_t *counters,
		 uint64_t *drops)
{
	tp.host = host;
	tp.port = &tp_roce_udp_port;
	tp.counters = counters;
	tp.drops = drops;
	sof_list_init(&tp.qps);
	sof_list_init(&tp.acks);
	sof_list_init(&tp.timers);
	tp.now_scope = 0; /* tp_now: no handling under way */
	tp.now_ns = 0;
	tp_tracing = getenv("SOFTOFED_TRACE") != NULL;
	tp_sack_start();
	tp_udp_start(fd4, fd6, tx);
	tp.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	return tp.timer_fd < 0 ? -errno : 0;
}

int tp_start(const struct tp_host_ops *host, int fd4, int fd6, uint64_t *counters, uint64_t *drops)
{
	return start(host, fd4, fd6, true, counters, drops);
}

int tp_start_unplugged(const struct tp_host_ops *host, uint64_t *counters, uint64_t *drops)
{
	return start(host, -1, -1, false, counters, drops);
}

void tp_replug(int fd4, int fd6, uint64_t *counters, uint64_t *drops)
{
	tp.counters = counters;
	tp.drops = drops;
	tp_udp_start(fd4, fd6, false);
}

void tp_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tp.host->log(fmt, ap);
	va_end(ap);
}

bool tp_gid_local(const uint8_t gid[16]) { return tp.host->gid_local(gid); }

uint64_t tp_counter(enum sof_counter c) { return tp.counters[c]; }
uint64_t tp_onesided(void) { return tp.onesided; }
uint64_t tp_requests(void) { return tp.requests; }
void tp_count_add(enum sof_counter c, uint64_t n) { tp_count(c, n); }
void tp_drop_add(enum sof_dropctr d) { tp_drop(d); }

void tp_defer_acks(bool on) { tp.defer_acks = on; }
bool tp_acks_due(void) { return !sof_list_empty(&tp.acks); }
bool tp_rx_foreign(void) { return tp.flow_foreign; }
void tp_rx_stop(void) { tp.rx_stop = true; }

void tp_tx_flush(void)
{
	if (tp.ntx)
		tp.port->flush();
	if (tp.ib)
		tp.ib->flush();
}

uint16_t tp_flow_port(bool v6, uint32_t sqpn, uint32_t dqpn)
{
	return tp.port->flow_port(v6, sqpn, dqpn);
}

const uint8_t *tp_sgid(uint32_t index)
{
	const struct sof_gid_entry *e = tp.host->gid(index);

	return e ? e->gid : NULL;
}

int tp_send_ref(const struct tp_path *path, struct roce_hdr *h, const struct iovec *pay,
		uint32_t npay)
{
	uint64_t paylen = 0;

	const struct tp_port_ops *p = path->link == TP_LINK_IB ? tp.ib : tp.port;

	for (uint32_t i = 0; i < npay; i++)
		paylen += pay[i].iov_len;
	if (!p)
		return -ENETUNREACH;
	if (paylen > p->max_payload)
		return -EMSGSIZE;
	return p->send(path, h, (uint32_t)paylen, NULL, NULL, pay, npay);
}

static int gather_buf(void *arg, uint8_t *dst, uint32_t len)
{
	memcpy(dst, arg, len);
	return 0;
}

int tp_ud_send(const struct tp_path *path, uint32_t sqpn, uint32_t dqpn, uint32_t qkey,
	       uint16_t pkey, uint32_t *psn, const uint8_t *data, uint32_t len)
{
	struct roce_hdr h;

	memset(&h, 0, sizeof(h));
	h.opcode = ROCE_UD_SEND_ONLY;
	h.pkey = pkey;
	h.dqpn = dqpn;
	h.psn = *psn;
	*psn = (*psn + 1) & ROCE_PSN_MASK;
	h.qkey = qkey;
	h.sqpn = sqpn;
	return tp_send(path, &h, len, gather_buf, (void *)data);
}
