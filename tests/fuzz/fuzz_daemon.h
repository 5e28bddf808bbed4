/*
 * What daemon/main.c gives the rest of the daemon (it is not linked into a
 * fuzz target: it has main): the globals and the log. Included by the one
 * file of a fuzz target that stands in for main.c; FUZZ_NAME names the
 * target in its failure messages.
 */
#ifndef FUZZ_DAEMON_H
#define FUZZ_DAEMON_H

#include "sofd.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

struct sofd sofd;

void sofd_log(const char *fmt, ...)
{
	va_list ap;

	if (!getenv("SOF_FUZZ_LOG"))
		return;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* A broken harness or a seed that does not do what it was made for. */
#define FAIL(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, FUZZ_NAME ": " __VA_ARGS__);                                       \
		fputc('\n', stderr);                                                               \
		abort();                                                                           \
	} while (0)

#endif
