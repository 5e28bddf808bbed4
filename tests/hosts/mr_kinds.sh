#!/bin/bash
# Registered memory between two hosts (issue 17, item 2): tests/progs/
# mr_kinds with its server on host a and its client on host b over veth:
# the client RDMA READs the server's region, RDMA WRITEs it and SENDs into
# it, every byte checked on both sides. Private anonymous memory (touched
# and never touched), a MAP_SHARED region and on-demand paging, explicit
# and implicit, and a region registered without a request to the daemon
# (posted: the daemon takes its record at the first use of its key, here
# a packet for the daemon's engine) (tests/progs/mr_kinds.c), each with the programs' own
# engines (which use the registered addresses) and with the daemons'
# (SOFTOFED_ENGINE=daemon: the daemon reaches the region in place through
# its owner's /proc/<pid>/mem and a bounce ring).
# Needs root (ip netns).
# Usage: tests/hosts/mr_kinds.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_init

PORT=19760
PROG=$SOF_BUILD_DIR/tests/mr_kinds

sof_hosts_up 2 || exit 1
ga=$(sof_host_gid a) || {
	not_ok "hosts/mr_kinds" "no GID of host a's address"
	exit 1
}
gb=$(sof_host_gid b) || {
	not_ok "hosts/mr_kinds" "no GID of host b's address"
	exit 1
}

# tests/run.sh runs it again with SOFTOFED_ENGINE=daemon (and the ASan
# daemon): then every QP is the daemon's
engines="program daemon"
[ "${SOFTOFED_ENGINE:-}" = daemon ] && engines=daemon
for engine in $engines; do
	E=()
	[ "$engine" = daemon ] && E=(env SOFTOFED_ENGINE=daemon)
	for kind in anon shared untouched odp odp_implicit posted; do
		name="hosts/mr_kinds $kind memory, the $engine's engine"
		PORT=$((PORT + 1))
		sof_host_bg srv a 90 "${E[@]}" "$SOFTOFED" run -- "$PROG" -k "$kind" -p "$PORT" -g "$ga"
		if ! sof_host_wait_listen a "$PORT" 20 srv; then
			not_ok "$name" "the server does not listen"
			sof_dump "$(sof_out srv)"
			sof_kill srv
			continue
		fi
		sof_host_bg cli b 90 "${E[@]}" "$SOFTOFED" run -- "$PROG" -k "$kind" -p "$PORT" -g "$gb" \
			"$(sof_host_ip a)"
		sof_wait cli 90
		crc=$?
		sof_wait srv 30
		src=$?
		if [ $crc -eq 0 ] && [ $src -eq 0 ] && [ "$(tail -n 1 "$(sof_out srv)")" = ok ] &&
			[ "$(tail -n 1 "$(sof_out cli)")" = ok ]; then
			ok "$name: READ, WRITE and SEND from the other host, every byte checked"
		else
			not_ok "$name" "exit status server $src, client $crc"
			sof_dump "$(sof_out srv)" "$(sof_out cli)"
		fi
	done
done
sof_exit
