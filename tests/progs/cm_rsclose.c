/*
 * cm_rsclose ADDR PORT: an rsocket closed in one thread while another
 * waits in it (issue 22). One process: a connection to itself through our
 * librdmacm's rsocket API, rconnect before raccept in one thread (the
 * listener's backlog answers it); a thread blocks in rrecv on the accepted
 * socket, then a thread blocks in raccept on the listener; the main thread
 * closes each of them. Each waiting call must return (an error or end of
 * stream) within 5 s. Prints one line per case: "rrecv: returned N (...)
 * after close", "raccept: ..."; exits 0 when both returned, 1 otherwise.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <rdma/rsocket.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct addrinfo *res;
static int cfd = -1;

static void *connector(void *arg)
{
	(void)arg;
	cfd = rsocket(AF_INET, SOCK_STREAM, 0);
	if (cfd < 0 || rconnect(cfd, res->ai_addr, res->ai_addrlen))
		perror("cm_rsclose: rconnect");
	return NULL;
}

struct waiter {
	int fd;
	bool accept;
	long ret;
	int err;
};

static void *waiter(void *arg)
{
	struct waiter *w = arg;
	char buf[64];

	if (w->accept)
		w->ret = raccept(w->fd, NULL, NULL);
	else
		w->ret = rrecv(w->fd, buf, sizeof(buf), 0);
	w->err = errno;
	return NULL;
}

/* Close fd while w waits in it: true when the waiter returned in 5 s. */
static bool close_under(struct waiter *w, const char *what)
{
	struct timespec ts;
	pthread_t t;

	pthread_create(&t, NULL, waiter, w);
	usleep(300000);
	rclose(w->fd);
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 5;
	if (pthread_timedjoin_np(t, NULL, &ts)) {
		printf("%s: still waiting 5 s after close\n", what);
		return false;
	}
	printf("%s: returned %ld (%s) after close\n", what, w->ret,
	       w->ret < 0 ? strerror(w->err) : "end of stream");
	return true;
}

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct waiter rw = { 0 }, aw = { .accept = true };
	int ls, s, one = 1;
	bool good;

	if (argc != 3 || getaddrinfo(argv[1], argv[2], &hints, &res))
		return 2;
	ls = rsocket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 || rsetsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    rbind(ls, res->ai_addr, res->ai_addrlen) || rlisten(ls, 1)) {
		perror("cm_rsclose: listen");
		return 2;
	}
	/* connect first, one thread: the listener's accept thread answers
	 * (a backlog, as TCP's), raccept then takes the connection */
	connector(NULL);
	s = raccept(ls, NULL, NULL);
	if (s < 0 || cfd < 0) {
		perror("cm_rsclose: raccept");
		return 2;
	}
	rw.fd = s;
	good = close_under(&rw, "rrecv");
	aw.fd = ls;
	good &= close_under(&aw, "raccept");
	rclose(cfd);
	fflush(stdout);
	return good ? 0 : 1;
}
