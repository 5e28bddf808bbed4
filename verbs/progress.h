/*
 * The same-host progress thread (progress.c): it runs the send WQEs that
 * had to wait (an RNR wait, a peer that does not answer yet) until they
 * complete or their timers run out. The engine in the program has a
 * thread of its own (tp_host.c).
 */
#ifndef SOFV_PROGRESS_H
#define SOFV_PROGRESS_H

#include "sofv.h"

/* qp has deferred WQEs: put it on its context's list and wake the thread
 * (started on first use). Lock: takes ctx->prog_lock. */
void sofv_progress_add(struct sofv_qp *qp);
/* The QP goes: take it off the list. Lock: takes ctx->prog_lock. */
void sofv_progress_forget(struct sofv_qp *qp);
/* A context opens (the lock and condition) and closes (the thread stops). */
void sofv_progress_init(struct sofv_context *ctx);
void sofv_progress_stop(struct sofv_context *ctx);

#endif
