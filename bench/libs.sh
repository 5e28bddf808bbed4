# shellcheck shell=bash
# bench/libs.sh — issue 17's ratios: the libraries on softofed against the
# same libraries on the kernel's TCP and shared memory, side by side in one
# run (sourced by bench/run.sh; `bench/run.sh --section libs` runs this
# section alone, `make bench` runs it after the two-host phase).
#
# Two hosts (network namespaces a and b joined by a veth pair, MTU 9000,
# a daemon in each serving veth0 only, as a RoCE NIC on it would):
#   Open MPI: bench/mpi_pp (8 B ping-pong latency, 1 MiB windowed
#             bandwidth, data checked), one rank per host, over UCX on
#             softofed (--mca pml ucx, UCX_TLS=rc_verbs,ud_verbs,self on
#             sof0:1) and over TCP (--mca pml ob1 --mca btl tcp,self);
#   UCX:      ucx_perftest tag_lat 8 B and tag_bw 1 MiB (one batch) with
#             UCX_TLS=rc_verbs,ud_verbs,self (ud_verbs: the wire-up
#             UCX needs beside rc_verbs) on softofed and tcp,self;
#   libfabric fi_pingpong 8 B (latency) and 1 MiB (ping-pong bandwidth)
#             and bench/fi_stream 1 MiB (16 in flight), verbs;ofi_rxm on
#             softofed and tcp;ofi_rxm.
# One host (both sides in host a): UCX tag_lat 8 B and tag_bw 1 MiB over
# rc_verbs on softofed, posix and posix,cma.
# Each pair of a ratio is measured in the same round, in REPS rounds (the
# order reversed every other one, run.sh `rounds`); the ratio printed is
# the median of the per-round ratios, with its target. MPI ranks are not
# pinned (each host's orted would bind its one rank to the same core);
# the other programs are, as everywhere in run.sh.

LIBS_WRAP="" # "$SOFTOFED run --", set by phase_libs

libs_build() {
	command -v mpicc >/dev/null 2>&1 || return 1
	if [ ! -x "$BIN/mpi_pp" ] || [ "$BENCH_DIR/mpi_pp.c" -nt "$BIN/mpi_pp" ]; then
		mpicc -O2 -Wall -Wextra -o "$BIN/mpi_pp" "$BENCH_DIR/mpi_pp.c" || return 1
	fi
}

# libs_mpi ucx|tcp: one mpirun of mpi_pp from host a, a rank in a and b
libs_mpi() {
	local pml=$1 out hf args rc line
	local lat="MPI veth: mpi_pp 8 B latency ($pml)" bw="MPI veth: mpi_pp 1 MiB bandwidth ($pml)"
	wanted "$lat" || wanted "$bw" || return 0
	[ -x "$BIN/mpi_pp" ] || {
		fail "$lat" "bench/mpi_pp was not built (Debian: libopenmpi-dev)"
		return 0
	}
	out=$SOF_TMP/mpi-$pml.out
	hf=$SOF_TMP/mpi.hostfile
	printf '%s\n' "10.77.0.1 slots=1" "10.77.0.2 slots=1" >"$hf"
	# shellcheck disable=SC2054 # the commas are UCX_TLS's and btl's
	args=(--allow-run-as-root --bind-to none --mca plm_rsh_agent "$SOF_ROOT/tests/mpi/rsh_agent.sh"
		--mca oob_tcp_if_include 10.77.0.0/24 --mca plm_rsh_no_tree_spawn 1 --hostfile "$hf" -np 2)
	if [ "$pml" = ucx ]; then
		# shellcheck disable=SC2054
		args+=(--mca pml ucx --mca btl self --mca osc ^ucx
			-x UCX_TLS=rc_verbs,ud_verbs,self -x UCX_NET_DEVICES=sof0:1)
	else
		# shellcheck disable=SC2054
		args+=(--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include veth0)
	fi
	log "$lat"
	export SOF_HOSTS_PREFIX SOFTOFED # for the agent
	SOF_MPI_AGENT_SECS=120 timeout -k 5 120 ip netns exec "$V_A" "$SOFTOFED" run -- \
		mpirun "${args[@]}" "$BIN/mpi_pp" 8 $((20000 / SCALE)) "$MIB" $((400 / SCALE)) \
		>"$out" 2>&1 </dev/null
	rc=$?
	line="ip netns exec $V_A softofed run -- mpirun ${args[*]} $(rel "$BIN")/mpi_pp 8 $((20000 / SCALE)) $MIB $((400 / SCALE))"
	line=${line//$SOF_ROOT\//}
	if [ "$rc" -ne 0 ] || ! grep -q '^mpi_pp: bw' "$out"; then
		fail "$lat" "mpirun exit $rc: $({ grep -i -m 3 -E 'error|abort|signal' "$out"; tail -n 2 "$out"; } | tr '\n' ' ')"
		return 0
	fi
	PLOT="" SERIES="" BYTES=8 rec "$lat" "us (one-way)" "$(awk '$2 == "lat" { print $5 }' "$out")" "$line"
	PLOT="" SERIES="" BYTES=$MIB rec "$bw" "MiB/s" "$(awk '$2 == "bw" { print $5 }' "$out")" "$line"
}

l_mpi_ucx() { libs_mpi ucx; }
l_mpi_tcp() { libs_mpi tcp; }
# UCX between the hosts: rc_verbs on softofed, tcp
l_ucx_rc() {
	RUN_WRAP=$LIBS_WRAP UCX_DEV=sof0:1 ucx_run veth rc_verbs,ud_verbs rc_verbs "$V_A" "$V_B" "$V_IP" \
		$((256 * MIB)) 8 "$MIB" "" ""
}
l_ucx_tcp() { ucx_run veth tcp tcp "$V_A" "$V_B" "$V_IP" $((256 * MIB)) 8 "$MIB" "" ""; }
# libfabric between the hosts: verbs;ofi_rxm on softofed, tcp;ofi_rxm.
# fi_pingpong times an RDM endpoint from before its first send, and RxM
# connects on that send: its time includes RxM's connection (the RDMA CM
# exchange, buffer pools of tens of MiB faulted in and registered, the
# CM events RxM reads every 10 ms; longer over verbs than over tcp), which
# at 20,000 8 B or 64 1 MiB ping-pongs took as long as the ping-pongs
# themselves. LIBS_FI_BUDGET / LIBS_FI_MAXI: enough of them
# (100,000 at 8 B, 1,024 at 1 MiB) that the connection is a few percent.
LIBS_FI_BUDGET=$((1024 * 1048576))
LIBS_FI_MAXI=100000
l_fi_verbs() {
	RUN_WRAP=$LIBS_WRAP fi_run veth "verbs;ofi_rxm" rdm "$V_A" "$V_B" "$V_IP" "" "8 $MIB" \
		"$LIBS_FI_BUDGET" "$LIBS_FI_MAXI" "" ""
	RUN_WRAP=$LIBS_WRAP fi_stream_run veth "verbs;ofi_rxm" "$V_A" "$V_B" "$V_IP" "" "$MIB" \
		$((512 * MIB)) ""
}
l_fi_tcp() {
	fi_run veth "tcp;ofi_rxm" rdm "$V_A" "$V_B" "$V_IP" veth0 "8 $MIB" "$LIBS_FI_BUDGET" \
		"$LIBS_FI_MAXI" "" ""
	fi_stream_run veth "tcp;ofi_rxm" "$V_A" "$V_B" "$V_IP" veth0 "$MIB" $((512 * MIB)) ""
}
# UCX on one host (both sides in host a): rc_verbs on softofed, posix, cma
l_one_rc() {
	RUN_WRAP=$LIBS_WRAP UCX_DEV=sof0:1 ucx_run "one host" rc_verbs,ud_verbs rc_verbs "$V_A" "$V_A" "$V_IP" \
		$((1024 * MIB)) 8 "$MIB" "" ""
}
l_one_posix() { ucx_run "one host" posix posix "$V_A" "$V_A" "$V_IP" $((1024 * MIB)) 8 "$MIB" "" ""; }
l_one_cma() { ucx_run "one host" posix,cma cma "$V_A" "$V_A" "$V_IP" $((1024 * MIB)) 8 "$MIB" "" ""; }

# libs_ratios TSV: the ratios with their targets, a Markdown table (each
# the median of the per-round ratios: the figures of both labels taken in
# the same round, the TSV's 8th column; a round where one side failed is
# left out)
libs_ratios() {
	awk -F'\t' '
	function med(a, n,   i, j, t) {
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	{
		rd = $8 != "" ? $8 : ++seq[$1]
		v[$1, rd] = $3
		if (rd > maxr) maxr = rd
	}
	function row(what, num, den, op, target,   k, m, r, a, b) {
		m = 0
		for (k = 1; k <= maxr; k++)
			if ((num, k) in v && (den, k) in v && v[den, k] > 0) {
				m++
				r[m] = v[num, k] / v[den, k]
				a[m] = v[num, k]
				b[m] = v[den, k]
			}
		if (!m) {
			printf "| %s | not measured in any round | %s %s | |\n", what, op, target
			return
		}
		r0 = med(r, m)
		fa = med(a, m)
		fb = med(b, m)
		ok = (op == "<=") ? r0 <= target : r0 >= target
		printf "| %s | %.2f (%s / %s, %d rounds) | %s %s | %s |\n", what, r0, fa, fb, m, op, target, ok ? "met" : "not met"
	}
	END {
		print "| ratio | value (softofed / peer, medians) | target | |"
		print "|---|---|---|---|"
		row("Open MPI 8 B latency, UCX on softofed / TCP (veth)", "MPI veth: mpi_pp 8 B latency (ucx)", "MPI veth: mpi_pp 8 B latency (tcp)", "<=", 0.5)
		row("Open MPI 1 MiB bandwidth, UCX on softofed / TCP (veth)", "MPI veth: mpi_pp 1 MiB bandwidth (ucx)", "MPI veth: mpi_pp 1 MiB bandwidth (tcp)", ">=", 1.5)
		row("UCX tag_lat 8 B, rc_verbs / tcp (veth)", "UCX veth: ucx_perftest tag_lat 8 B (rc_verbs)", "UCX veth: ucx_perftest tag_lat 8 B (tcp)", "<=", 1)
		row("UCX tag_bw 1 MiB, rc_verbs / tcp (veth)", "UCX veth: ucx_perftest tag_bw 1 MiB (rc_verbs)", "UCX veth: ucx_perftest tag_bw 1 MiB (tcp)", ">=", 1.5)
		row("libfabric fi_pingpong 8 B latency, verbs;ofi_rxm / tcp;ofi_rxm (veth)", "libfabric veth: fi_pingpong 8 B (verbs;ofi_rxm)", "libfabric veth: fi_pingpong 8 B (tcp;ofi_rxm)", "<=", 1)
		row("libfabric fi_pingpong 1 MiB bandwidth, verbs;ofi_rxm / tcp;ofi_rxm (veth)", "libfabric veth: fi_pingpong bw 1 MiB (verbs;ofi_rxm)", "libfabric veth: fi_pingpong bw 1 MiB (tcp;ofi_rxm)", ">=", 1.5)
		row("libfabric fi_stream 1 MiB, verbs;ofi_rxm / tcp;ofi_rxm (veth)", "libfabric veth: fi_stream 1 MiB (verbs;ofi_rxm)", "libfabric veth: fi_stream 1 MiB (tcp;ofi_rxm)", ">=", 1.5)
		row("UCX tag_lat 8 B, rc_verbs / posix (one host)", "UCX one host: ucx_perftest tag_lat 8 B (rc_verbs)", "UCX one host: ucx_perftest tag_lat 8 B (posix)", "<=", 2)
		row("UCX tag_lat 8 B, rc_verbs / cma (one host)", "UCX one host: ucx_perftest tag_lat 8 B (rc_verbs)", "UCX one host: ucx_perftest tag_lat 8 B (cma)", "<=", 2)
		row("UCX tag_bw 1 MiB, rc_verbs / posix (one host)", "UCX one host: ucx_perftest tag_bw 1 MiB (rc_verbs)", "UCX one host: ucx_perftest tag_bw 1 MiB (posix)", ">=", 1)
		row("UCX tag_bw 1 MiB, rc_verbs / cma (one host)", "UCX one host: ucx_perftest tag_bw 1 MiB (rc_verbs)", "UCX one host: ucx_perftest tag_bw 1 MiB (cma)", ">=", 1)
	}' "$1"
}

# phase_libs: the section (two hosts; needs root)
phase_libs() {
	local fns
	if [ "$(id -u)" -ne 0 ]; then
		fail "libraries (issue 17)" "needs root (ip netns add); not measured"
		return 0
	fi
	libs_build || fail "MPI veth: mpi_pp" "mpicc mpi_pp.c failed or mpicc is missing (Debian: libopenmpi-dev)"
	if ! SOF_HOSTS_IFACES=veth0 hosts_up ""; then
		fail "libraries (issue 17)" "sof_hosts_up 2 failed: $HOSTS_ERR"
		return 0
	fi
	LIBS_WRAP="$SOFTOFED run --"
	fns=(l_mpi_ucx l_mpi_tcp l_ucx_rc l_ucx_tcp l_fi_verbs l_fi_tcp l_one_rc l_one_posix l_one_cma)
	rounds "${fns[@]}"
	note "libs" "issue 17's ratios: hosts a and b (veth, daemons serving veth0 only); the MPI ranks are not pinned (--bind-to none), every other program is (taskset)"
	sof_hosts_down
}
