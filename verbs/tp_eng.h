/*
 * The engine in the program (transport/README.md), inside verbs/: the
 * state that tp_host.c (the engine's host, its loop, the QPs) and
 * tp_slot.c (the steering slot the daemon lends, and the flow sockets)
 * share. Every field is under eng.lock unless its comment says otherwise.
 */
#ifndef SOFV_TP_ENG_H
#define SOFV_TP_ENG_H

#include "sofv.h"

#include "sof_list.h"
#include "tp.h"

#include <pthread.h>

/* The flow sockets (tp_slot.c has the whole story). */
#define FLOWS_MAX 4
#define FLOWS_PEERS 4
#define FLOWS_BANNED 16
#define FLOWS_SLOT_TURN 8u
#define FLOWS_RETRY_NS 1000000000ull

struct eng_peer {
	uint8_t addr[16];
	bool ok;	   /* the daemon agreed */
	uint64_t retry_ns; /* refused: ask again from then on */
};

struct eng_flow {
	int fd;
	bool v6;
	struct roce_addr a; /* src: the peer, sport its port; dst: ours */
};
/* Regions tp_mr_ptr keeps, by key. */
#define MR_CACHE 4

struct sofv_eng {
	pthread_mutex_t lock;	   /* the engine, this struct's QPs and GIDs, every sofv_eqp */
	struct sofv_context *ctx;  /* whose slot, NULL: not running */
	bool tried;		   /* asked, for this context or the last one (tp_host.c start) */
	bool started;		   /* the engine ran once: tp_start, the thread's fds, atexit */
	bool v6;		   /* some QP's path is IPv6, or a UD QP: poll that socket too */
	bool roce;		   /* some QP's peer is on another host over RoCE */
	bool running;		   /* the progress thread runs */
	_Atomic uint32_t ack_hold; /* ACKs held by a poller leave after this many polls */
	struct sof_link pending;   /* QPs with posted WQEs the requester has yet to take */
	struct sof_hmap qps;	   /* qpn -> struct tp_qp of a sofv_eqp */
	struct sof_gid_entry gids[SOF_MAX_GIDS]; /* the context's, as last read */
	uint32_t num_gids;
	int fd4, fd6; /* the slot's receive sockets (-1: none) */
	int fdib;     /* its member on the InfiniBand link (-1: none, or ctx is not sofib0) */
	int timer_fd;
	int epfd, stopfd;
	pthread_t thread;
	_Atomic bool polled;   /* a thread polled or posted since the progress thread looked */
	_Atomic bool sleeping; /* the progress thread waits for the sockets alone */
	_Atomic uint64_t poll_read_ns; /* when a poller last read the sockets */
	int kickfd;		       /* wakes it: a thread started to poll (note_active) */
	struct sof_tp_counters *cnt;   /* the slot's counter page (daemon/steer.c) */
	bool armed;		       /* the progress thread reads the sockets */
	_Atomic bool watching;	       /* armed, as others may read it without the lock */
	_Atomic uint64_t arm_ns;       /* a CQ was armed then: a thread may sleep on its
					* channel's fd outside our calls (sofv_engine_flush) */
	_Atomic bool outside;	       /* the program waits for events outside our calls */
	_Atomic unsigned outside_run;  /* ibv_get_cq_event found its event at once so often */
	struct eng_flow flows[FLOWS_MAX];
	unsigned nflows;
	struct eng_flow banned[FLOWS_BANNED]; /* fd unused; the oldest goes first */
	unsigned nbanned;
	unsigned slot_turn;
	unsigned roce_turn;  /* rx_slot: sofib0 alone, the RoCE sockets every FLOWS_SLOT_TURN-th */
	unsigned slot_drain; /* a flow socket is new: read the slot's first (at most so often) */
	struct eng_peer peers[FLOWS_PEERS];
	unsigned npeers;
	int revokefd;	       /* the slot's eventfd: the daemon took flows back */
	uint64_t revoked_seen; /* the slot's flows_revoked as last acted on */
	struct {
		uint32_t key;
		uint64_t gen; /* ctx->mr_gen when found, 0: empty */
		struct sofv_mr *mr;
	} mrs[MR_CACHE]; /* tp_mr_ptr's, of ctx */
};

extern struct sofv_eng eng;

void eng_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int eng_epoll_add(int fd, void *ptr);

/* tp_slot.c, under the lock */
int eng_slot_take(struct sofv_context *ctx);
void eng_slot_drop(void);
void eng_flow_seen(const struct roce_addr *a);
void eng_flow_close(unsigned i, bool ban);
void eng_flows_revoked(void);
void eng_rx_sockets(bool poller);

#endif
