#!/bin/bash
# shellcheck disable=SC2034 # before/after: read through check's eval
# The device where programs look for it outside libibverbs (issue 17,
# item 1): under `softofed run`, /dev/infiniband/uverbsN is a character
# device and /sys/class/infiniband/sof0, /sys/class/infiniband_verbs show
# what our libibverbs reports, in the kernel's formats:
#   - root: uverbs0 is a character device (mknod 231:192), readable and
#     writable; node_guid, sys_image_guid, fw_ver, port state, phys_state,
#     link_layer and every GID with its type (gids/N, gid_attrs/types/N)
#     equal `ibv_devinfo -v`; gid_attrs/ndevs/N and device/net/ name the
#     interfaces the daemon serves (`softofed status`), the veth's GID
#     its veth; ibv_device.dev_name/dev_path are uverbs0's (ctypes);
#     /dev/infiniband/rdma_cm a character device; ports/1/hw_counters
#     with rxe's counter names; parent names the veth; no device/driver
#     link (rxe, a virtual device, has none);
#   - the host's /dev and /sys are unchanged afterwards, and none of our
#     mounts is in the host's mount namespace;
#   - a nested `softofed run` sees the same device, once;
#   - a host with a real device (simulated in a mount namespace of the
#     test's own: mlx5_0, uverbs0): its entries stay, unchanged, beside
#     ours; sof0 takes uverbs1 (231:193) and libibverbs names it so;
#   - unprivileged (uid 65534 by setpriv): the same through a user
#     namespace, uverbs0 being /dev/null bound under the name; or, where
#     unprivileged user namespaces are off, case (c) below;
#   - neither root nor user namespaces (a user namespace whose
#     max_user_namespaces is 0, every capability dropped): the program
#     runs without, after one line on stderr;
#   - SOFTOFED_PRESENT=0: nothing shown, nothing said, verbs work;
#   - UCX finds the device: `ucx_info -d` lists rc_verbs and ud_verbs on
#     sof0:1 and the rdmacm CM, with UCX's memory hooks on (its mremap
#     hook drops MREMAP_FIXED's new address; the library's registration
#     moves pages with raw system calls, out of such hooks' reach).
# Runs in a private network namespace with its own daemon.
#
# Usage: tests/integration/devpresence.sh
set -u
# shellcheck source=tests/lib.sh
. "$(dirname "$0")/../lib.sh"
sof_ns_enter "$@"
sof_init

ST=$SOF_TMP/status

# check NAME CONDITION...: ok when the shell CONDITION holds (eval: it may
# use variables such as before and after); else not_ok
# and status 1
check() {
	local name=$1
	shift
	if eval "$*"; then
		ok "$name"
	else
		not_ok "$name" "$*"
		return 1
	fi
}

# host_state: what must not change outside our namespaces
host_state() {
	find /dev /sys/class -maxdepth 1 -printf '%y %p\n' 2>/dev/null | sort
	ls -la /dev/infiniband /sys/class/infiniband /sys/class/infiniband_verbs 2>&1
	grep -c ' - tmpfs softofed ' /proc/self/mountinfo
}

# facts: run inside the presentation; one "key value" line per fact
# shellcheck disable=SC2016
FACTS='
p=/sys/class/infiniband/sof0
echo "id $(id -u)"
echo "lsdev $(ls -l /dev/infiniband/uverbs0)"
[ -c /dev/infiniband/uverbs0 ] && echo "chr yes"
[ -r /dev/infiniband/uverbs0 ] && [ -w /dev/infiniband/uverbs0 ] && echo "rw yes"
echo "devnum $(stat -c %t:%T /dev/infiniband/uverbs0)"
for f in node_guid sys_image_guid fw_ver node_type; do echo "$f $(cat $p/$f)"; done
for f in state phys_state link_layer rate lid; do echo "port_$f $(cat $p/ports/1/$f)"; done
for f in $p/ports/1/gids/*; do echo "gid ${f##*/} $(cat $f)"; done
for f in $p/ports/1/gid_attrs/types/*; do echo "type ${f##*/} $(cat $f)"; done
for f in $p/ports/1/gid_attrs/ndevs/*; do echo "ndev ${f##*/} $(cat $f)"; done
for f in $p/device/net/*; do echo "net ${f##*/}"; done
echo "numa $(cat $p/device/numa_node)"
[ -c /dev/infiniband/rdma_cm ] && [ -r /dev/infiniband/rdma_cm ] && [ -w /dev/infiniband/rdma_cm ] && echo "rdma_cm yes"
echo "hwc $(ls $p/ports/1/hw_counters | xargs)"
echo "hwc_sent $(cat $p/ports/1/hw_counters/sent_pkts)"
echo "parent $(cat $p/parent)"
[ -e $p/device/driver ] || echo "driver none"
echo "ibdev $(cat /sys/class/infiniband_verbs/uverbs0/ibdev)"
echo "uverbs_dev $(cat /sys/class/infiniband_verbs/uverbs0/dev)"
echo "abi $(cat /sys/class/infiniband_verbs/abi_version)"
echo "mounts $(grep -c " - tmpfs softofed " /proc/self/mountinfo)"
python3 -c "
import ctypes
v = ctypes.CDLL(\"libibverbs.so.1\")
v.ibv_get_device_list.restype = ctypes.POINTER(ctypes.c_void_p)
lst = v.ibv_get_device_list(None)
base = lst[0] + 16 + 8  # ops (two pointers), node_type, transport_type
s = lambda off, n: ctypes.string_at(base + off, n).split(b\"\\0\")[0].decode()
print(\"ibv_name\", s(0, 64)); print(\"ibv_dev_name\", s(64, 64)); print(\"ibv_dev_path\", s(128, 256))
"
'

# fact FILE KEY: the value of the first "KEY value" line
fact() { sed -n "s/^$2 //p" "$1" | head -n 1; }

# ---- the set-up: a veth with an IPv4 and an IPv6 address ------------------

ip link add dp0 type veth peer name dp1 || not_ok "setup" "veth"
for i in dp0 dp1; do
	sysctl -q -w "net.ipv6.conf.$i.addr_gen_mode=1" # no link-local GIDs
	ip link set "$i" up
done
ip addr add 10.77.0.1/24 dev dp0
ip addr add 2001:db8:77::1/64 dev dp0 nodad
for _ in $(seq 100); do
	timeout 5 "$SOFTOFED" status >"$ST" 2>&1 </dev/null
	grep -q '::ffff:10.77.0.1 ' "$ST" && grep -q '2001:db8:77::1 ' "$ST" && break
	sleep 0.05
done
check "setup: the veth's GIDs are in the table" "grep -q '2001:db8:77::1 ' '$ST'"
SERVED=$(sed -n 's/^interfaces: //p' "$ST")

# ---- (a) root ---------------------------------------------------------------

before=$(host_state)
out=$SOF_TMP/root.out
timeout 30 "$SOFTOFED" run -- bash -c "$FACTS
ibv_devinfo -v" >"$out" 2>"$out.err" </dev/null
rc=$?
check "root: softofed run exit 0" "[ $rc -eq 0 ]"
check "root: nothing on stderr" "[ ! -s '$out.err' ]" || sof_dump "$out.err"
check "root: ls -l /dev/infiniband/uverbs0 is a character device" \
	"fact '$out' lsdev | grep -q '^c'"
check "root: uverbs0 is 231:192 (mknod), readable and writable" \
	"[ \"\$(fact '$out' devnum)\" = e7:c0 ] && [ \"\$(fact '$out' rw)\" = yes ]"
check "root: node_guid as ibv_devinfo" \
	"grep -q \"node_guid:[[:space:]]*\$(fact '$out' node_guid)\$\" '$out'"
check "root: sys_image_guid as ibv_devinfo" \
	"grep -q \"sys_image_guid:[[:space:]]*\$(fact '$out' sys_image_guid)\$\" '$out'"
check "root: fw_ver as ibv_devinfo" "grep -q \"fw_ver:[[:space:]]*\$(fact '$out' fw_ver)\$\" '$out'"
check "root: node_type '1: CA'" "[ \"\$(fact '$out' node_type)\" = '1: CA' ]"
check "root: port state '4: ACTIVE' (PORT_ACTIVE (4))" \
	"[ \"\$(fact '$out' port_state)\" = '4: ACTIVE' ] && grep -q 'state:[[:space:]]*PORT_ACTIVE (4)' '$out'"
check "root: phys_state '5: LinkUp' (LINK_UP (5))" \
	"[ \"\$(fact '$out' port_phys_state)\" = '5: LinkUp' ] && grep -q 'phys_state:[[:space:]]*LINK_UP (5)' '$out'"
check "root: link_layer Ethernet" \
	"[ \"\$(fact '$out' port_link_layer)\" = Ethernet ] && grep -q 'link_layer:[[:space:]]*Ethernet' '$out'"
check "root: device/numa_node -1" "[ \"\$(fact '$out' numa)\" = -1 ]"
check "root: /dev/infiniband/rdma_cm a readable, writable character device" "[ \"\$(fact '$out' rdma_cm)\" = yes ]"
check "root: ports/1/hw_counters with rxe's names, lifespan, sent_pkts a number" \
	"[ \"\$(fact '$out' hwc)\" = 'ack_deferred completer_retry_err duplicate_request lifespan link_downed out_of_seq_request rcvd_pkts rcvd_rnr_err rcvd_seq_err rdma_recvs rdma_sends retry_exceeded_err retry_rnr_exceeded_err send_err send_rnr_err sent_pkts' ] && [ \"\$(fact '$out' hwc_sent)\" -ge 0 ]"
check "root: parent names the served veth (rxe's parent), no device/driver (as rxe: a virtual device)" \
	"[ \"\$(fact '$out' parent)\" = dp0 ] && [ \"\$(fact '$out' driver)\" = none ]"
check "root: uverbs0 ibdev sof0, dev 231:192, abi_version 6" \
	"[ \"\$(fact '$out' ibdev)\" = sof0 ] && [ \"\$(fact '$out' uverbs_dev)\" = 231:192 ] && [ \"\$(fact '$out' abi)\" = 6 ]"
check "root: ibv_device name sof0, dev_name uverbs0, dev_path of uverbs0" \
	"[ \"\$(fact '$out' ibv_name)\" = sof0 ] && [ \"\$(fact '$out' ibv_dev_name)\" = uverbs0 ] && [ \"\$(fact '$out' ibv_dev_path)\" = /sys/class/infiniband_verbs/uverbs0 ]"

# The GID table: each sysfs entry (eight groups of four hex digits) and
# its type against ibv_devinfo's GID lines; zero entries are not in use.
if python3 - "$out" >"$SOF_TMP/gids.cmp" 2>&1 <<'EOF'; then
import ipaddress, re, sys
lines = open(sys.argv[1]).read().splitlines()
sysfs, types, dev = {}, {}, {}
for l in lines:
    k = l.split(" ", 2)
    if k[0] == "gid":
        assert re.fullmatch(r"([0-9a-f]{4}:){7}[0-9a-f]{4}", k[2]), l
        a = ipaddress.IPv6Address(k[2])
        if int(a):
            sysfs[int(k[1])] = a
    elif k[0] == "type":
        types[int(k[1])] = k[2]
    m = re.match(r"\s+GID\[\s*(\d+)\]:\s+([^,]+), (.*)$", l)
    if m:
        dev[int(m.group(1))] = (ipaddress.IPv6Address(m.group(2)), m.group(3))
mine = {i: (a, types.get(i)) for i, a in sysfs.items()}
print("sysfs", mine)
print("ibv_devinfo", dev)
sys.exit(0 if mine == dev and len(dev) >= 3 else 1)
EOF
	ok "root: every GID and its type (gids/N, gid_attrs/types/N) as ibv_devinfo -v"
else
	not_ok "root: every GID and its type as ibv_devinfo -v" "differ"
	sof_dump "$SOF_TMP/gids.cmp"
fi
nets=$(sed -n 's/^net //p' "$out" | sort | xargs)
# lo only when it is the only one (it is not here)
check "root: device/net lists the served interfaces but lo ($SERVED)" \
	"[ '$nets' = \"\$(echo $SERVED | tr ' ' '\n' | grep -v -x lo | sort | xargs)\" ]"
bad=0
while read -r idx name; do
	echo " $SERVED " | grep -q " $name " || bad=1
done < <(sed -n 's/^ndev //p' "$out")
check "root: every gid_attrs/ndevs/N names a served interface" "[ $bad -eq 0 ] && grep -q '^ndev ' '$out'"
idx=$(grep -i 'ffff:0a4d:0001$' "$out" | sed -n 's/^gid \([0-9]*\) .*/\1/p')
check "root: the veth's GID has ndevs dp0" "[ -n '$idx' ] && [ \"\$(fact '$out' \"ndev $idx\")\" = dp0 ]"
check "root: our mounts are inside the namespace" "[ \"\$(fact '$out' mounts)\" -gt 0 ]"
after=$(host_state)
check "root: the host's /dev and /sys unchanged, no mount of ours outside" \
	"[ \"\$before\" = \"\$after\" ] && [ \"\${after##*$'\n'}\" = 0 ]"

out=$SOF_TMP/nested.out
timeout 30 "$SOFTOFED" run -- "$SOFTOFED" run -- bash -c "$FACTS" >"$out" 2>&1 </dev/null
check "nested softofed run: the same device, mounted once" \
	"[ \"\$(fact '$out' ibv_dev_name)\" = uverbs0 ] && [ \"\$(fact '$out' chr)\" = yes ] && [ \"\$(fact '$out' mounts)\" = \"\$(fact '$SOF_TMP/root.out' mounts)\" ]"

# ---- a host with a real RDMA device ------------------------------------------
# Simulated in a mount namespace of this test's own: a tmpfs /dev with a
# few nodes and /dev/infiniband/uverbs0 (231:192), a tmpfs /sys/class with
# net/ bound back and infiniband/mlx5_0, infiniband_verbs/uverbs0 of a
# device that is not ours. Its entries must stay, ours come beside them.

# shellcheck disable=SC2016
REAL='
set -e
mount --make-rprivate /
mkdir -p "$T/dev" "$T/class"
mount -t tmpfs fake "$T/dev"
for n in null zero urandom; do touch "$T/dev/$n"; mount --bind "/dev/$n" "$T/dev/$n"; done
mkdir "$T/dev/infiniband" "$T/dev/pts" "$T/dev/shm"
mknod -m 666 "$T/dev/infiniband/uverbs0" c 231 192
mount -t tmpfs fake "$T/class"
mkdir -p "$T/class/net" "$T/class/infiniband" "$T/class/infiniband_verbs/uverbs0"
mount --rbind /sys/class/net "$T/class/net"
ln -s ../../devices/pci0000:00/0000:00:03.0/infiniband/mlx5_0 "$T/class/infiniband/mlx5_0"
echo mlx5_0 >"$T/class/infiniband_verbs/uverbs0/ibdev"
echo 6 >"$T/class/infiniband_verbs/abi_version"
mount --move "$T/class" /sys/class
mount --move "$T/dev" /dev
host() {
	ls -l /dev/infiniband | tail -n +2 | sort
	ls -l /sys/class/infiniband /sys/class/infiniband_verbs | sort
	cat /sys/class/infiniband_verbs/uverbs0/ibdev
}
before=$(host)
"$1" run -- bash -c "$2" >"$T/inside.out" 2>&1
after=$(host)
[ "$before" = "$after" ] && echo "real: unchanged" >>"$T/inside.out"
'
T=$SOF_TMP/real
mkdir -p "$T"
# shellcheck disable=SC2016
INNER='ls /dev/infiniband | xargs echo "devs"
ls /sys/class/infiniband | xargs echo "ibdevs"
echo "mlx5 $(readlink /sys/class/infiniband/mlx5_0)"
echo "uverbs0 $(cat /sys/class/infiniband_verbs/uverbs0/ibdev) $(stat -c %t:%T /dev/infiniband/uverbs0)"
echo "uverbs1 $(cat /sys/class/infiniband_verbs/uverbs1/ibdev) $(stat -c %t:%T /dev/infiniband/uverbs1)"
'"$(printf '%s\n' "$FACTS" | sed -n '/^python3/,$p')"
T=$T timeout 30 unshare -m bash -c "$REAL" real "$SOFTOFED" "$INNER" >"$T/outer.out" 2>&1 </dev/null
out=$T/inside.out
check "real device: its entries stay beside sof0's (/dev/infiniband: issm0 rdma_cm umad0 uverbs0 uverbs1; infiniband: mlx5_0 sof0)" \
	"[ \"\$(fact '$out' devs)\" = 'issm0 rdma_cm umad0 uverbs0 uverbs1' ] && [ \"\$(fact '$out' ibdevs)\" = 'mlx5_0 sof0' ] && [ \"\$(fact '$out' mlx5)\" = ../../devices/pci0000:00/0000:00:03.0/infiniband/mlx5_0 ]" ||
	sof_dump "$out" "$T/outer.out"
check "real device: its uverbs0 untouched (mlx5_0, 231:192); ours is uverbs1 (sof0, 231:193)" \
	"[ \"\$(fact '$out' uverbs0)\" = 'mlx5_0 e7:c0' ] && [ \"\$(fact '$out' uverbs1)\" = 'sof0 e7:c1' ]"
check "real device: libibverbs names sof0 uverbs1" "[ \"\$(fact '$out' ibv_dev_name)\" = uverbs1 ]"
check "real device: the (simulated) host's entries unchanged afterwards" "grep -q '^real: unchanged' '$out'"

# ---- (b) unprivileged -------------------------------------------------------

AS_NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
if ! "${AS_NOBODY[@]}" test -x "$SOFTOFED"; then
	not_ok "unprivileged" "uid 65534 cannot run $SOFTOFED (build directory not readable)"
elif "${AS_NOBODY[@]}" unshare -U true 2>/dev/null; then
	out=$SOF_TMP/nobody.out
	before=$(host_state)
	timeout 30 "${AS_NOBODY[@]}" "$SOFTOFED" run -- bash -c "$FACTS" >"$out" 2>"$out.err" </dev/null
	rc=$?
	after=$(host_state)
	check "unprivileged: exit 0, nothing on stderr, runs as uid 65534" \
		"[ $rc -eq 0 ] && [ ! -s '$out.err' ] && [ \"\$(fact '$out' id)\" = 65534 ]" || sof_dump "$out.err"
	check "unprivileged: uverbs0 and rdma_cm readable, writable character devices" \
		"[ \"\$(fact '$out' chr)\" = yes ] && [ \"\$(fact '$out' rw)\" = yes ] && [ \"\$(fact '$out' rdma_cm)\" = yes ]"
	check "unprivileged: sysfs as root's (node_guid, GIDs, ndevs, device/net)" \
		"diff <(grep -E '^(node_guid|gid|type|ndev|net|port_state) ' '$SOF_TMP/root.out') <(grep -E '^(node_guid|gid|type|ndev|net|port_state) ' '$out') >/dev/null"
	check "unprivileged: dev_name uverbs0" "[ \"\$(fact '$out' ibv_dev_name)\" = uverbs0 ]"
	check "unprivileged: the host's /dev and /sys unchanged" "[ \"\$before\" = \"\$after\" ]"
else
	out=$SOF_TMP/nobody.out
	timeout 30 "${AS_NOBODY[@]}" "$SOFTOFED" run -- ibv_devices >"$out" 2>"$out.err" </dev/null
	check "unprivileged, no user namespaces here: runs, one line says why" \
		"grep -q sof0 '$out' && [ \$(wc -l <'$out.err') -eq 1 ] && grep -q 'find no RDMA device' '$out.err'"
fi

# ---- (c) neither ------------------------------------------------------------

out=$SOF_TMP/neither.out
# shellcheck disable=SC2016
timeout 30 unshare --user --map-root-user bash -c \
	'echo 0 >/proc/sys/user/max_user_namespaces &&
	 exec setpriv --bounding-set=-all --inh-caps=-all "$1" run -- bash -c "ls /dev/infiniband/uverbs0 /sys/class/infiniband/sof0 >/dev/null 2>&1 && echo shown; ibv_devices"' \
	neither "$SOFTOFED" >"$out" 2>"$out.err" </dev/null
rc=$?
check "neither root nor user namespaces: the program runs (ibv_devices lists sof0)" \
	"[ $rc -eq 0 ] && grep -q '^[[:space:]]*sof0' '$out' && ! grep -q shown '$out'"
check "neither: exactly one line on stderr, saying UCX finds no device" \
	"[ \$(wc -l <'$out.err') -eq 1 ] && grep -q 'neither root nor unprivileged user namespaces.*(UCX) find no RDMA device' '$out.err'" ||
	sof_dump "$out.err"

# ---- opt-out ----------------------------------------------------------------

out=$SOF_TMP/optout.out
SOFTOFED_PRESENT=0 timeout 30 "$SOFTOFED" run -- bash -c \
	'grep -c " - tmpfs softofed " /proc/self/mountinfo; grep -ls "^sof0$" /sys/class/infiniband_verbs/*/ibdev; ibv_devices' \
	>"$out" 2>"$out.err" </dev/null
check "SOFTOFED_PRESENT=0: no presentation, nothing said, ibv_devices lists sof0" \
	"[ \"\$(head -n 1 '$out')\" = 0 ] && ! grep -q ibdev '$out' && grep -q '^[[:space:]]*sof0' '$out' && [ ! -s '$out.err' ]"

# ---- UCX --------------------------------------------------------------------

out=$SOF_TMP/ucx.out
if ! command -v ucx_info >/dev/null 2>&1; then
	not_ok "ucx_info -d" "ucx_info is not installed (tests/install-deps.sh installs ucx-utils)"
else
	timeout 60 "$SOFTOFED" run -- ucx_info -d >"$out" 2>&1 </dev/null
	rc=$?
	for tl in rc_verbs ud_verbs; do
		check "ucx_info -d: $tl on sof0:1" \
			"[ $rc -eq 0 ] && grep -A1 'Transport: $tl\$' '$out' | grep -q 'Device: sof0:1\$'"
	done
	check "ucx_info -d: the rdmacm connection manager" "grep -q 'Connection manager: rdmacm' '$out'"
	[ $rc -eq 0 ] || sof_dump "$out"
fi

sof_exit
