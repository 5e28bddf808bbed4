/*
 * The softofed command's parts (tools/): ctl.c talks to the device daemon
 * of this network namespace, present.c and mountns.c show its device in
 * /dev and /sys for the program that `softofed run` starts, softofed.c
 * holds the commands.
 */
#ifndef SOFTOFED_TOOL_H
#define SOFTOFED_TOOL_H

#include "sof_proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SOFT_WAIT_MS 5000

/* ---- ctl.c: the daemon ---------------------------------------------------- */

extern char soft_exe_dir[]; /* directory of this program */

void soft_find_exe_dir(void);
const char *soft_daemon_path(void);
uint64_t soft_now_ms(void);
void soft_sleep_ms(long ms);
/* A connection to the daemon (timeouts set) or -errno. */
int soft_connect(void);
/* One request without descriptors or request body. 0, the daemon's
 * -errno, or -errno. */
int soft_rpc(int fd, uint32_t op, void *rep, size_t replen);
int soft_get_status(struct sof_status_rep *st);
int soft_get_netdevs(struct sof_netdevs_rep *nd);
/* Start the daemon unless one answers (*started tells which), serving
 * ifaces (comma-separated, NULL: the default); wait until it answers. */
/* extra: more arguments for softofedd (NULL-terminated, the InfiniBand
 * port's --ib-* options), or NULL. */
int soft_ensure_daemon(struct sof_status_rep *st, const char *ifaces, char *const *extra,
		       bool *started);

/* ---- fabric.c: `softofed fabric ...` (argv[0] is the subcommand) ------- */

int soft_cmd_fabric(int argc, char **argv);

/* ---- capture.c: `softofed capture ...` (argv[0] is the first argument) */

int soft_cmd_capture(int argc, char **argv);

/* ---- ipoib.c: `softofed ipoib up|down|status` (argv[0] is the subcommand) */

int soft_cmd_ipoib(int argc, char **argv);
/* `softofed status`'s lines of the IPoIB interfaces that answer */
void soft_ipoib_summary(void);

/* ---- present.c: the device where programs look for it --------------------- */

/* Give the calling process (about to exec a program) a private mount
 * namespace in which /dev/infiniband and /sys/class/infiniband{,_verbs}
 * show the daemon's device; st is the daemon's STATUS. When it cannot,
 * prints one line to stderr and returns 0: the program runs without.
 * -EUCLEAN only when the process can no longer run it (soft_ns_enter). */
int soft_present(const struct sof_status_rep *st);

/* ---- mountns.c: namespaces and covering mounts ---------------------------- */

/* Enter a private mount namespace (a user namespace too when not
 * privileged). 0, or -errno with *what naming the step that failed;
 * -EUCLEAN when a user namespace was made but our ids could not be
 * mapped in it: the process must not go on to run the program. */
int soft_ns_enter(const char **what);
/* Make dir a writable tmpfs that still shows the entries dir had; a dir
 * that does not exist is made inside its parent, covered so. 0 or -errno. */
int soft_ns_cover(const char *dir);
/* Whether the process is root in the initial user namespace (mknod works). */
bool soft_ns_can_mknod(void);
/* Make every tmpfs soft_ns_cover mounted read-only. */
void soft_ns_seal(void);

#endif
