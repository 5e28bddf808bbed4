/*
 * A channel destroyed while another thread waits in rdma_get_cm_event on
 * it (tests/consumers/rdmacm.sh), as rping's server does when its peer
 * disconnects: with rdma-core the waiting thread stays in its read of the
 * channel's file, which no event reaches any more, and the program ends
 * when its main thread does. So must it here, whatever wakes the waiting
 * thread (the destroy, or an event for an id already gone).
 *
 *   cm_chan_destroy [-a ADDR] [-p PORT]
 *
 * A listening id on a channel; a thread waits on the channel; the main
 * thread destroys the id and the channel, and 300 ms later checks that the
 * thread has not come back. Output "ok" (exit 0) or "fail: REASON"
 * (exit 1).
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct rdma_event_channel *chan;
static _Atomic int came_back; /* 1 + the errno it came back with */
static _Atomic int waiting;

static void *wait_event(void *arg)
{
	struct rdma_cm_event *ev;
	int ret;

	(void)arg;
	atomic_store(&waiting, 1);
	ret = rdma_get_cm_event(chan, &ev);
	atomic_store(&came_back, 1 + (ret ? errno : 0));
	return NULL;
}

static int fail(const char *what)
{
	printf("fail: %s\n", what);
	return 1;
}

int main(int argc, char **argv)
{
	const char *addr = "127.0.0.1", *port = "19991";
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
	struct rdma_cm_id *id;
	pthread_t thr;
	int c;

	while ((c = getopt(argc, argv, "a:p:")) != -1) {
		if (c == 'a')
			addr = optarg;
		else if (c == 'p')
			port = optarg;
		else
			return fail("usage: cm_chan_destroy [-a ADDR] [-p PORT]");
	}
	if (getaddrinfo(addr, port, &hints, &ai))
		return fail("getaddrinfo");
	chan = rdma_create_event_channel();
	if (!chan)
		return fail("rdma_create_event_channel");
	if (rdma_create_id(chan, &id, NULL, RDMA_PS_TCP))
		return fail("rdma_create_id");
	if (rdma_bind_addr(id, ai->ai_addr) || rdma_listen(id, 1))
		return fail("rdma_bind_addr/rdma_listen");
	freeaddrinfo(ai);
	if (pthread_create(&thr, NULL, wait_event, NULL))
		return fail("pthread_create");
	while (!atomic_load(&waiting))
		usleep(1000);
	usleep(100000); /* in its read by now */
	if (rdma_destroy_id(id))
		return fail("rdma_destroy_id");
	rdma_destroy_event_channel(chan);
	usleep(300000);
	c = atomic_load(&came_back);
	if (c) {
		printf("fail: the waiting thread came back (%s)\n",
		       c == 1 ? "with an event" : strerror(c - 1));
		return 1;
	}
	printf("ok\n");
	return 0; /* the waiting thread ends with the process */
}
