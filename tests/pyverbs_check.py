#!/usr/bin/python3
"""tests/pyverbs_check.py: rdma-core's Python bindings (Debian's
python3-pyverbs) against our libibverbs, every byte checked.

  pyverbs_check.py [-d DEV] [-a ADDR] local
  pyverbs_check.py [-d DEV] [-a ADDR] server PORT
  pyverbs_check.py [-d DEV] [-a ADDR] client HOST PORT

Opens DEV (default sof0; found in get_device_list), queries the device
(query_device, query_device_ex), port 1 (ACTIVE, its link layer and MTU)
and the GID table (query_gid, query_gid_type, query_gid_ex,
query_gid_table): the GID of ADDR (default 127.0.0.1, as ::ffff:ADDR) must
be there as RoCEv2, and every way of reading it must agree. Then PD, MR,
CQ and an RC QP; `local` connects two QPs of this process, `server` and
`client` one QP each side after a TCP exchange of QP number, PSN, GID,
rkey and address (the server listens on PORT). The client (or the first
QP) then sends SENDs of 1 B, 4096 B and 65536 B, an RDMA WRITE of 100000
bytes followed by a SEND that announces it, an RDMA WRITE with immediate
and an RDMA READ of the peer's pattern; the receiver checks each message's
length, immediate and every byte, the client every byte read.

Must run under Debian's /usr/bin/python3 (pyverbs is built for it).
Prints "ok STEP" lines and ends with "pyverbs_check: all ok" (exit 0), or
"FAIL: REASON" (exit 1).
"""
import argparse
import ipaddress
import json
import random
import socket
import struct
import sys
import time

import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context, get_device_list
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

PORT_NUM = 1
MR_SIZE = 1 << 20
SEND_SIZES = (1, 4096, 65536)
WRITE_LEN = 100000
WRITE_OFF = 200000  # where the WRITE lands in the receiver's MR
READ_LEN = 70000
READ_OFF = 400000   # where the READ's data come from (the responder's MR)
IMM = 0x5ee0f00d
TIMEOUT = 10.0


class Fail(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Fail(what)


def pattern(tag, n):
    """n bytes that depend on tag and on their offset"""
    return random.Random(tag).randbytes(n)


class Side:
    """one RC QP with its CQ and a 1 MiB MR"""

    def __init__(self, ctx, pd, gid_index):
        self.ctx = ctx
        self.gid_index = gid_index
        self.cq = CQ(ctx, 64)
        access = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | \
            e.IBV_ACCESS_REMOTE_READ
        self.mr = MR(pd, MR_SIZE, access)
        cap = QPCap(max_send_wr=16, max_recv_wr=16, max_send_sge=1, max_recv_sge=1)
        init = QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap)
        self.qp = QP(pd, init)
        self.psn = random.randrange(1 << 24)
        check(self.qp.qp_state == e.IBV_QPS_RESET, "a new QP is in RESET")

    def info(self):
        gid = self.ctx.query_gid(PORT_NUM, self.gid_index)
        return {"qpn": self.qp.qp_num, "psn": self.psn, "gid": gid.gid,
                "rkey": self.mr.rkey, "addr": self.mr.buf}

    def connect(self, peer):
        from pyverbs.addr import GID
        attr = QPAttr(port_num=PORT_NUM)
        attr.qp_access_flags = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | \
            e.IBV_ACCESS_REMOTE_READ
        attr.path_mtu = e.IBV_MTU_1024
        attr.dest_qp_num = peer["qpn"]
        attr.rq_psn = peer["psn"]
        attr.sq_psn = self.psn
        attr.max_dest_rd_atomic = 1
        attr.max_rd_atomic = 1
        attr.min_rnr_timer = 12
        attr.timeout = 14
        attr.retry_cnt = 7
        attr.rnr_retry = 7
        gr = GlobalRoute(dgid=GID(peer["gid"]), sgid_index=self.gid_index, hop_limit=64)
        attr.ah_attr = AHAttr(port_num=PORT_NUM, is_global=1, gr=gr)
        self.qp.to_rts(attr)
        check(self.qp.qp_state == e.IBV_QPS_RTS, "QP in RTS after to_rts")

    def post_recv(self, wr_id, off, length):
        self.qp.post_recv(RecvWR(wr_id=wr_id, num_sge=1,
                                 sg=[SGE(self.mr.buf + off, length, self.mr.lkey)]))

    def post_send(self, wr_id, opcode, off, length, rkey=None, raddr=None, imm=0):
        sge = SGE(self.mr.buf + off, length, self.mr.lkey)
        wr = SendWR(wr_id=wr_id, opcode=opcode, num_sge=1, sg=[sge], imm_data=imm,
                    send_flags=e.IBV_SEND_SIGNALED)
        if rkey is not None:
            wr.set_wr_rdma(rkey, raddr)
        self.qp.post_send(wr)

    def poll(self, what):
        """the next completion (within TIMEOUT), which must be a success"""
        end = time.monotonic() + TIMEOUT
        while time.monotonic() < end:
            n, wcs = self.cq.poll(1)
            if n:
                wc = wcs[0]
                check(wc.status == e.IBV_WC_SUCCESS,
                      f"{what}: completion status {wc.status} (wr_id {wc.wr_id})")
                return wc
            time.sleep(0.0001)
        raise Fail(f"{what}: no completion within {TIMEOUT} s")


def open_device(name):
    names = [d.name.decode() for d in get_device_list()]
    check(name in names, f"{name} not in get_device_list(): {names}")
    return Context(name=name)


def query(ctx, addr):
    """the device, port and GID checks; returns the GID index of addr"""
    dev = ctx.query_device()
    check(dev.max_qp > 0 and dev.max_cqe > 0 and dev.max_mr_size > 0 and
          dev.phys_port_cnt >= 1, "query_device: max_qp, max_cqe, max_mr_size, ports")
    dx = ctx.query_device_ex()
    check(dx.orig_attr.max_qp == dev.max_qp, "query_device_ex agrees with query_device")
    print(f"ok query_device: vendor_id {dev.vendor_id:#x}"
          f" max_qp {dev.max_qp} max_cqe {dev.max_cqe} max_sge {dev.max_sge}")
    port = ctx.query_port(PORT_NUM)
    check(port.state == e.IBV_PORT_ACTIVE, f"port {PORT_NUM} state {port.state}, not ACTIVE")
    check(port.link_layer == e.IBV_LINK_LAYER_ETHERNET, "port link layer not Ethernet")
    check(port.gid_tbl_len > 0, "gid_tbl_len 0")
    print(f"ok query_port: ACTIVE, Ethernet, active_mtu {port.active_mtu}, "
          f"gid_tbl_len {port.gid_tbl_len}")
    want = ipaddress.IPv6Address("::ffff:" + addr).exploded
    found = None
    for i in range(port.gid_tbl_len):
        g = ctx.query_gid(PORT_NUM, i).gid
        if g == want:
            found = i
            break
    check(found is not None, f"GID {want} of {addr} not in the table")
    check(ctx.query_gid_type(PORT_NUM, found) == e.IBV_GID_TYPE_SYSFS_ROCE_V2,
          f"GID {found} not RoCEv2 (query_gid_type)")
    ent = ctx.query_gid_ex(port_num=PORT_NUM, gid_index=found)
    check(ent.gid_str() == want and ent.gid_index == found and
          ent.gid_type == e.IBV_GID_TYPE_ROCE_V2 and ent.port_num == PORT_NUM,
          f"query_gid_ex: {ent.gid_str()} index {ent.gid_index} type {ent.gid_type}")
    table = ctx.query_gid_table(port.gid_tbl_len)
    check(any(t.gid_str() == want and t.gid_index == found for t in table),
          "query_gid_table has not that GID")
    print(f"ok GID {want} at index {found}: RoCEv2 by query_gid_type, query_gid_ex, "
          f"query_gid_table ({len(table)} entries)")
    return found


def recv_side(s, peer):
    """the receiver: SENDs, the announced WRITE, the WRITE with immediate"""
    off = 0
    for i, n in enumerate(SEND_SIZES):
        s.post_recv(i, off, n)
        off += n
    s.post_recv(10, 600000, 64)      # the SEND that announces the WRITE
    s.post_recv(11, 600064, 0)       # the WRITE with immediate
    read_src = pattern(7, READ_LEN)  # the client READs this
    s.mr.write(read_src, READ_LEN, READ_OFF)
    return off


def recv_check(s):
    off = 0
    for i, n in enumerate(SEND_SIZES):
        wc = s.poll(f"SEND {n} B received")
        check(wc.opcode == e.IBV_WC_RECV and wc.wr_id == i and wc.byte_len == n,
              f"SEND {n} B: opcode {wc.opcode} wr_id {wc.wr_id} byte_len {wc.byte_len}")
        got = s.mr.read(n, off)
        check(got == pattern(i + 1, n), f"SEND {n} B: data differ")
        off += n
    print(f"ok RC SEND {', '.join(str(n) for n in SEND_SIZES)} B: lengths and every byte")
    wc = s.poll("the SEND after the WRITE")
    check(wc.wr_id == 10 and wc.byte_len == 8, "the SEND after the WRITE")
    n = struct.unpack("<Q", s.mr.read(8, 600000))[0]
    check(n == WRITE_LEN, f"announced WRITE length {n}")
    check(s.mr.read(WRITE_LEN, WRITE_OFF) == pattern(5, WRITE_LEN), "RDMA WRITE: data differ")
    print(f"ok RDMA WRITE {WRITE_LEN} B: every byte")
    wc = s.poll("the WRITE with immediate")
    check(wc.opcode == e.IBV_WC_RECV_RDMA_WITH_IMM and wc.wr_id == 11 and
          (wc.wc_flags & e.IBV_WC_WITH_IMM),
          f"WRITE with immediate: opcode {wc.opcode} flags {wc.wc_flags}")
    imm = socket.ntohl(wc.imm_data)
    check(imm == IMM, f"immediate {imm:#x}, not {IMM:#x}")
    check(s.mr.read(4096, 700000) == pattern(6, 4096), "WRITE with immediate: data differ")
    print(f"ok RDMA WRITE with immediate {IMM:#x}: 4096 B, every byte")


def send_side(s, peer):
    off = 0
    for i, n in enumerate(SEND_SIZES):
        s.mr.write(pattern(i + 1, n), n, off)
        s.post_send(i, e.IBV_WR_SEND, off, n)
        s.poll(f"SEND {n} B sent")
        off += n
    s.mr.write(pattern(5, WRITE_LEN), WRITE_LEN, 100000)
    s.post_send(20, e.IBV_WR_RDMA_WRITE, 100000, WRITE_LEN, peer["rkey"],
                peer["addr"] + WRITE_OFF)
    s.poll("RDMA WRITE")
    s.mr.write(struct.pack("<Q", WRITE_LEN), 8, 300000)
    s.post_send(21, e.IBV_WR_SEND, 300000, 8)
    s.poll("the SEND after the WRITE")
    s.mr.write(pattern(6, 4096), 4096, 310000)
    s.post_send(22, e.IBV_WR_RDMA_WRITE_WITH_IMM, 310000, 4096, peer["rkey"],
                peer["addr"] + 700000, imm=socket.htonl(IMM))
    s.poll("RDMA WRITE with immediate")
    s.mr.write(bytes(READ_LEN), READ_LEN, 800000)
    s.post_send(23, e.IBV_WR_RDMA_READ, 800000, READ_LEN, peer["rkey"],
                peer["addr"] + READ_OFF)
    wc = s.poll("RDMA READ")
    check(wc.opcode == e.IBV_WC_RDMA_READ, f"RDMA READ: opcode {wc.opcode}")
    check(s.mr.read(READ_LEN, 800000) == pattern(7, READ_LEN), "RDMA READ: data differ")
    print(f"ok RDMA READ {READ_LEN} B: every byte")


def exchange(sock, mine):
    """send one JSON line, read the peer's next one (lines are read through
    one buffered reader per socket: two may come in one segment)"""
    sock.sendall((json.dumps(mine) + "\n").encode())
    if not hasattr(exchange, "readers"):
        exchange.readers = {}
    rd = exchange.readers.setdefault(sock.fileno(), sock.makefile("r"))
    line = rd.readline()
    check(line.endswith("\n"), "the peer closed the TCP exchange")
    return json.loads(line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-d", "--dev", default="sof0")
    ap.add_argument("-a", "--addr", default="127.0.0.1")
    ap.add_argument("mode", choices=["local", "server", "client"])
    ap.add_argument("rest", nargs="*")
    o = ap.parse_args()
    ctx = open_device(o.dev)
    gidx = query(ctx, o.addr)
    pd = PD(ctx)
    if o.mode == "local":
        a, b = Side(ctx, pd, gidx), Side(ctx, pd, gidx)
        print("ok PD, MR, CQ, 2 RC QPs")
        a.connect(b.info())
        b.connect(a.info())
        print("ok both QPs RESET -> INIT -> RTR -> RTS")
        recv_side(b, a.info())
        send_side(a, b.info())
        recv_check(b)
    else:
        s = Side(ctx, pd, gidx)
        print("ok PD, MR, CQ, RC QP")
        if o.mode == "server":
            ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ls.bind(("0.0.0.0", int(o.rest[0])))
            ls.listen(1)
            ls.settimeout(30)
            sock, _ = ls.accept()
        else:
            sock = socket.create_connection((o.rest[0], int(o.rest[1])), timeout=30)
        sock.settimeout(30)
        peer = exchange(sock, s.info())
        s.connect(peer)
        print("ok QP RESET -> INIT -> RTR -> RTS")
        if o.mode == "server":
            recv_side(s, peer)
            exchange(sock, {"ready": 1})
            recv_check(s)
            exchange(sock, {"checked": 1})
        else:
            exchange(sock, {"go": 1})
            send_side(s, peer)
            exchange(sock, {"done": 1})
    print("pyverbs_check: all ok")


if __name__ == "__main__":
    try:
        main()
    except Fail as ex:
        print(f"FAIL: {ex}")
        sys.exit(1)
