# SPDX-License-Identifier: GPL-2.0
# Hostile packets at two ferroce devices while an RC connection between them
# runs: RC QP A on DEV_A (address IP_A, namespace NS_A) and B on DEV_B (IP_B,
# NS_B) move data (READs, WRITEs, atomics, SENDs; when hostile packets break
# the connection, it is reset and connected again with new PSNs), and two
# injectors (this script re-entered with --inject, one in each namespace,
# sending from that side's address through a raw socket) send COUNT packets
# between them with a correct ICRC unless noted:
#   - every opcode IBTA defines, with boundary values in every field (QPN
#     0/1/live/max, PSN around the live one's expected PSN and across the
#     wrap, P_Key, pad, RETH va/rkey/length, every AETH syndrome, Q_Key,
#     payloads of 0 to 4200 bytes inconsistent with the opcode; FLUSH with
#     every placement type and level), and opcodes
#     IBTA does not define;
#   - raw random bytes after the UDP header;
#   - packets aimed at the live QPs (their numbers, expected PSNs, rkeys and
#     buffers, which allow FLUSH): duplicate READs, READs, WRITEs, atomics,
#     SENDs, FLUSHes (and duplicates of them) at the responder, ACKs/NAKs, READ responses and atomic acknowledgements at
#     the requester;
#   - datagrams at QP 1 (MAD-sized or not, with QP1's Q_Key or another);
#   - damage: a bad ICRC, headers cut short (ICRC made good again);
#   - trains: 2 to 8 of those packets as one UDP GSO datagram, which the
#     veth passes whole, so the receiving device walks its pieces itself:
#     most cut into equal pieces (the last shorter or as long) whose ICRCs
#     are good for the headers each piece would carry, some with a piece
#     damaged, some with a segment length off the packets' boundaries
#     (a train comes from a local UDP socket, its checksums left to fill in:
#     the device takes the ICRCs of its pieces on trust, Documentation/
#     wire.rst, so a piece damaged there reaches the transport's checks).
# QP numbers of other live QPs (rdma resource) are never named at random,
# so a bystander connection between the same devices is not hit.
# Prints "injected N", "bad_icrc N" (single packets sent with a bad ICRC),
# "bad_icrc_trusted N" (pieces of trains sent so) and what the connection did.
#
# usage: fuzz-wire.py DEV_A GIDX_A IP_A NS_A DEV_B GIDX_B IP_B NS_B COUNT SEED
#        fuzz-wire.py --inject STATE_FILE FROM_SIDE COUNT SEED
import json
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import roce_packet as rp  # noqa: E402

MR_SIZE = 65536
MAD = 256
GSI_QKEY = 0x80010000


def pick(rng, *choices):
    return choices[rng.randrange(len(choices))]


def u32(rng):
    return pick(rng, 0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, rng.getrandbits(32))


class Generator:
    """Packets from one side (`me`) at the other (`peer`), as the state file
    describes the live connection."""

    def __init__(self, state, side, rng):
        self.rng = rng
        self.side = side
        self.reload(state)

    def reload(self, state):
        me, peer = ("a", "b") if self.side == "a" else ("b", "a")
        self.src, self.dst = state["ip_" + me], state["ip_" + peer]
        self.qpn = state["qpn_" + peer]          # the peer's RC QP
        self.ud_qpn = state["ud_" + peer]
        self.epsn = state["rq_psn_" + peer]      # what the peer's responder expects
        self.spsn = state["sq_psn_" + peer]      # what its requester sends next
        self.va, self.rkey = state["va_" + peer], state["rkey_" + peer]
        self.avoid = set(state["avoid"])

    def qpn_any(self):
        r = self.rng
        q = pick(r, 0, 1, 2, self.qpn, self.qpn ^ 1, 0xFFFFFF, self.ud_qpn,
                 r.getrandbits(24), r.getrandbits(24))
        return r.getrandbits(24) if q in self.avoid else q

    def psn_near(self, base):
        r = self.rng
        d = pick(r, 0, 0, 1, -1, 2, -2, r.randrange(-64, 64), -1024, 1024, -(1 << 23),
                 (1 << 23) - 1, r.getrandbits(24))
        return (base + d) & 0xFFFFFF

    def reth_fields(self):
        r = self.rng
        va = pick(r, self.va, self.va + r.randrange(MR_SIZE), self.va + MR_SIZE - 1,
                  self.va + MR_SIZE, self.va - 1, 0, (1 << 64) - 1, r.getrandbits(64))
        rkey = pick(r, self.rkey, self.rkey, self.rkey ^ 1, self.rkey + 0x100, 0, 0xFFFFFFFF,
                    r.getrandbits(32))
        length = pick(r, 0, 1, 8, 1024, 4096, MR_SIZE, MR_SIZE + 1, 1 << 31, 0xFFFFFFFF,
                      r.randrange(MR_SIZE))
        return va & ((1 << 64) - 1), rkey, length

    def payload(self, opcode_has_payload):
        r = self.rng
        n = pick(r, 0, 1, 3, 8, 255, 256, 1023, 1024, 1025, 4096, 4200, r.randrange(4201))
        if not opcode_has_payload and r.random() < 0.7:
            n = 0
        return r.randbytes(n)

    def headers(self, hdrs, targeted):
        r = self.rng
        out = b""
        for h in hdrs:
            if h == "R":
                va, rkey, length = self.reth_fields()
                if targeted and r.random() < 0.5:
                    length = r.randrange(0, 2048)
                    va = self.va + r.randrange(MR_SIZE - length + 1)
                out += rp.reth(va, rkey, length)
            elif h == "A":
                out += rp.aeth(r.getrandbits(8), pick(r, 0, 1, 0xFFFFFF, r.getrandbits(24)))
            elif h == "X":
                va = pick(r, self.va + 8 * r.randrange(MR_SIZE // 8), self.va + 3, 0,
                          r.getrandbits(64))
                rkey = pick(r, self.rkey, self.rkey ^ 1, r.getrandbits(32))
                out += rp.atomic_eth(va, rkey, r.getrandbits(64), r.getrandbits(64))
            elif h == "K":
                out += rp.atomic_ack(r.getrandbits(64))
            elif h == "I":
                out += rp.imm(r.getrandbits(32))
            elif h == "V":
                out += rp.ieth(pick(r, self.rkey, r.getrandbits(32)))
            elif h == "F":
                # Every placement type and level, the defined ones most often.
                out += rp.feth(pick(r, 1, 2, 3, r.getrandbits(4)), pick(r, 0, 1, r.getrandbits(2)))
            elif h == "D":
                out += rp.deth(pick(r, GSI_QKEY, 0x11111111, 0, 0xFFFFFFFF, r.getrandbits(32)),
                               r.getrandbits(24))
        return out

    def bth(self, opcode, qpn, psn, pad=None):
        r = self.rng
        pkey = pick(r, 0xFFFF, 0xFFFF, 0xFFFF, 0x7FFF, 0x0000, 0x8001, r.getrandbits(16))
        return rp.bth(opcode, qpn, psn, pkey=pkey, se=r.random() < 0.2,
                      pad=r.randrange(4) if pad is None else pad, ack_req=r.random() < 0.5)

    def any_opcode(self):
        r = self.rng
        if r.random() < 0.05:
            opcode = r.getrandbits(8)
            hdrs, has_payload = rp.LAYOUT.get(opcode, ("".join(r.choice("RAXKIVDF")
                                                               for _ in range(r.randrange(3))),
                                                       True))
        else:
            opcode = r.choice(list(rp.LAYOUT))
            hdrs, has_payload = rp.LAYOUT[opcode]
        targeted = r.random() < 0.5
        qpn = self.qpn if targeted else self.qpn_any()
        psn = self.psn_near(self.epsn if r.random() < 0.7 else self.spsn)
        return self.bth(opcode, qpn, psn) + self.headers(hdrs, targeted) + \
            self.payload(has_payload), "opcodes"

    def aimed(self):
        """At the live connection: requests at its responder, answers at its requester."""
        r = self.rng
        kind = r.randrange(9)
        payload = b""
        if kind == 0:   # a duplicate READ of what may have been served
            opcode, psn = 0x0C, (self.epsn - r.randrange(1, 48)) & 0xFFFFFF
            length = pick(r, 64, 1024, 8192, MR_SIZE)
            ext = rp.reth(self.va + pick(r, 0, 4096), self.rkey, length)
        elif kind == 1:  # a READ at the expected PSN (served, if it passes the checks)
            opcode, psn = 0x0C, self.psn_near(self.epsn)
            length = r.randrange(0, 4097)
            ext = rp.reth(self.va + r.randrange(MR_SIZE - length + 1), self.rkey, length)
        elif kind == 2:  # a WRITE into its buffer
            opcode, psn = pick(r, 0x0A, 0x06, 0x0B), self.psn_near(self.epsn)
            payload = r.randbytes(pick(r, 0, 8, 1024, r.randrange(1025)))
            ext = rp.reth(self.va + r.randrange(MR_SIZE - len(payload) + 1), self.rkey,
                          pick(r, len(payload), len(payload) + 1024, r.getrandbits(32)))
            if opcode == 0x0B:
                ext += rp.imm(r.getrandbits(32))
        elif kind == 3:  # an atomic on its buffer
            opcode, psn = pick(r, 0x13, 0x14), self.psn_near(self.epsn)
            ext = rp.atomic_eth(self.va + 8 * r.randrange(MR_SIZE // 8), self.rkey,
                                r.getrandbits(64), r.getrandbits(64))
        elif kind == 4:  # a SEND
            opcode, psn = pick(r, 0x04, 0x00, 0x05, 0x17), self.psn_near(self.epsn)
            payload = r.randbytes(r.randrange(1100))
            ext = {0x05: rp.imm(1), 0x17: rp.ieth(self.rkey)}.get(opcode, b"")
        elif kind == 5:  # an ACK or NAK for what its requester has in flight
            opcode, psn = 0x11, (self.spsn - r.randrange(0, 64)) & 0xFFFFFF
            ext = rp.aeth(r.getrandbits(8), r.getrandbits(24))
        elif kind == 6:  # READ response packets
            opcode = r.choice([0x0D, 0x0E, 0x0F, 0x10])
            psn = (self.spsn - r.randrange(0, 64)) & 0xFFFFFF
            ext = rp.aeth(pick(r, 0x1F, r.getrandbits(8)), r.getrandbits(24)) \
                if opcode != 0x0E else b""
            payload = r.randbytes(pick(r, 1024, 0, r.randrange(1100)))
        elif kind == 7:  # an atomic acknowledgement
            opcode, psn = 0x12, (self.spsn - r.randrange(0, 64)) & 0xFFFFFF
            ext = rp.aeth(0x1F, r.getrandbits(24)) + rp.atomic_ack(r.getrandbits(64))
        else:           # a FLUSH of its buffer or of all of its MR, new or a duplicate
            opcode = 0x1C
            psn = pick(r, self.psn_near(self.epsn), (self.epsn - r.randrange(1, 48)) & 0xFFFFFF)
            length = pick(r, 0, 64, MR_SIZE, MR_SIZE + 1, 1 << 31, r.getrandbits(32))
            ext = rp.feth(pick(r, 1, 1, 2, 3, r.getrandbits(4)), pick(r, 0, 1, r.getrandbits(2)))
            # The 26 reserved bits, set at times: ignored.
            if r.random() < 0.2:
                ext = (int.from_bytes(ext, "big") | r.getrandbits(26) << 6).to_bytes(4, "big")
            ext += rp.reth(self.va + pick(r, 0, r.randrange(MR_SIZE + 1), r.getrandbits(64)),
                           pick(r, self.rkey, self.rkey, self.rkey ^ 0x100, r.getrandbits(32)),
                           length)
        pad = (-len(payload)) % 4
        return rp.bth(opcode, self.qpn, psn, pad=pad, ack_req=r.random() < 0.5) + ext + \
            payload + bytes(pad), "aimed"

    def gsi(self):
        r = self.rng
        qkey = pick(r, GSI_QKEY, GSI_QKEY, 0, r.getrandbits(32))
        n = pick(r, MAD, MAD, MAD, 0, 255, 257, 1024, r.randrange(2048))
        mad = bytearray(r.randbytes(n))
        if n >= 24 and r.random() < 0.7:
            # A MAD header ib_mad reads on: base version 1, a class it serves (CM, SA,
            # performance), a method, a status.
            mad[0:4] = bytes([1, pick(r, 0x07, 0x03, 0x04, r.getrandbits(8)), 2,
                              pick(r, 0x01, 0x03, 0x81, r.getrandbits(8))])
        opcode = pick(r, 0x64, 0x64, 0x65)
        ext = rp.deth(qkey, r.getrandbits(24)) + (rp.imm(0) if opcode == 0x65 else b"")
        pad = (-n) % 4
        return rp.bth(opcode, pick(r, 1, 1, 1, self.ud_qpn), r.getrandbits(24), pad=pad) + \
            ext + bytes(mad) + bytes(pad), "gsi"

    def raw(self):
        r = self.rng
        return r.randbytes(pick(r, 0, 1, 11, 12, 13, r.randrange(300))), "raw"

    def next(self):
        transport, kind, bad = self.next_transport()
        r = self.rng
        sport = pick(r, 0xC001, 0xFFFF, r.randrange(0xC000, 0x10000))
        return rp.ipv4_packet(self.src, self.dst, transport, sport=sport,
                              good_icrc=not bad), kind, bad

    def next_transport(self):
        """A packet's transport (BTH onwards, without ICRC), its kind, and
        whether its ICRC is to be bad."""
        r = self.rng
        x = r.random()
        if x < 0.10:
            transport, kind = self.raw()
        elif x < 0.20:
            transport, kind = self.gsi()
        elif x < 0.50:
            transport, kind = self.aimed()
        else:
            transport, kind = self.any_opcode()
        bad = False
        damage = r.random()
        if damage < 0.05:
            bad = True
        elif damage < 0.10 and len(transport) > 12:
            transport = transport[:r.randrange(12, len(transport))]
        return transport, kind, bad


TRAIN_SPORT = 0xC7F1


def train(gen):
    """A train of the generator's packets: the datagram's bytes, its segment
    length, how many of its pieces carry a bad ICRC on purpose."""
    r = gen.rng
    transports, cars = [], r.randrange(2, 9)
    while len(transports) < cars:
        t, _, _ = gen.next_transport()
        if 12 <= len(t) <= 2000:
            transports.append(t)
    if r.random() < 0.3:
        # Each piece whole and good alone, but cut at a length of no piece.
        data = b"".join(rp.train_piece(gen.src, gen.dst, TRAIN_SPORT, i, t)
                        for i, t in enumerate(transports))
        return data, r.randrange(1, 2100), 0
    # Equal pieces, the last as long or shorter: padded or cut to the first's.
    n = len(transports[0])
    pieces = [t[:n].ljust(n, b"\0") for t in transports[:-1]]
    pieces.append(transports[-1][:n])
    bad = 0
    data = b""
    for i, t in enumerate(pieces):
        good = r.random() >= 0.05
        bad += not good
        data += rp.train_piece(gen.src, gen.dst, TRAIN_SPORT, i, t, good_icrc=good)
    return data, n + 4, bad


def inject(state_file, side, count, seed):
    rng = random.Random(seed)
    with open(state_file) as f:
        gen = Generator(json.load(f), side, rng)
    sender = rp.Sender()
    trains = rp.TrainSender(gen.src, TRAIN_SPORT)
    kinds, bad, bad_trusted, errors = {}, 0, 0, 0
    for i in range(count):
        if i % 500 == 0:
            try:
                with open(state_file) as f:
                    gen.reload(json.load(f))
            except (OSError, ValueError):
                pass    # being rewritten: the last state serves
        try:
            if rng.random() < 0.03:
                data, segment, is_bad = train(gen)
                kind = "train"
                trains.send(gen.dst, data, segment)
            else:
                packet, kind, is_bad = gen.next()
                sender.send(packet)
        except OSError:
            errors += 1
            continue
        kinds[kind] = kinds.get(kind, 0) + 1
        if kind == "train":
            bad_trusted += is_bad
        else:
            bad += is_bad
        if i % 64 == 63:
            time.sleep(0.001)   # let the receiving softirq keep up with its backlog
    print(json.dumps({"side": side, "sent": count - errors, "bad_icrc": bad,
                      "bad_icrc_trusted": bad_trusted, "kinds": kinds,
                      "send_errors": errors}), flush=True)


if len(sys.argv) > 1 and sys.argv[1] == "--inject":
    inject(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    sys.exit(0)

from pyverbs_rc import connect_rc  # noqa: E402
from pyverbs.cq import CQ  # noqa: E402
from pyverbs.device import Context  # noqa: E402
from pyverbs.mr import MR  # noqa: E402
from pyverbs.pd import PD  # noqa: E402
from pyverbs.pyverbs_error import PyverbsError  # noqa: E402
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr  # noqa: E402
from pyverbs.wr import RecvWR, SGE, SendWR  # noqa: E402
import pyverbs.enums as e  # noqa: E402

dev_a, gidx_a, ip_a, ns_a, dev_b, gidx_b, ip_b, ns_b, count, seed = sys.argv[1:11]
count, seed = int(count), int(seed)
rng = random.Random(seed)
# IBV_ACCESS_FLUSH_GLOBAL (1 << 8; Debian's pyverbs 44 has no name for it): FLUSHes aimed
# at the live QP reach the memory checks.
ACCESS_FLUSH_GLOBAL = 1 << 8
access = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_WRITE |
          e.IBV_ACCESS_REMOTE_ATOMIC | ACCESS_FLUSH_GLOBAL)


class Side:
    def __init__(self, name, gidx):
        self.ctx = Context(name=name)
        self.gidx = gidx
        self.pd = PD(self.ctx)
        self.cq = CQ(self.ctx, 256)
        self.qp = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq,
                                         cap=QPCap(64, 64, 1, 1)))
        self.ud = QP(self.pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=self.cq, rcq=self.cq,
                                         cap=QPCap(4, 64, 1, 1)))
        a = QPAttr()
        a.qp_state, a.pkey_index, a.port_num, a.qkey = e.IBV_QPS_INIT, 0, 1, 0x11111111
        self.ud.modify(a, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_QKEY)
        a = QPAttr()
        a.qp_state = e.IBV_QPS_RTR
        self.ud.modify(a, e.IBV_QP_STATE)
        a = QPAttr()
        a.qp_state, a.sq_psn = e.IBV_QPS_RTS, 0
        self.ud.modify(a, e.IBV_QP_STATE | e.IBV_QP_SQ_PSN)
        self.mr = MR(self.pd, MR_SIZE, access)
        self.ud_mr = MR(self.pd, 64 * 2048, e.IBV_ACCESS_LOCAL_WRITE)
        for i in range(64):
            self.ud.post_recv(RecvWR(wr_id=i, num_sge=1,
                                     sg=[SGE(self.ud_mr.buf + 2048 * i, 2048, self.ud_mr.lkey)]))

    def psns(self):
        attr, _ = self.qp.query(e.IBV_QP_STATE | e.IBV_QP_RQ_PSN | e.IBV_QP_SQ_PSN)
        return attr.qp_state, attr.rq_psn, attr.sq_psn


a, b = Side(dev_a, gidx_a), Side(dev_b, gidx_b)


def connect():
    """(Re)connects A and B from RESET with fresh PSNs, close to the wrap half the time."""
    psn = rng.choice([0xFFFFF0, 0xFFFFFF, rng.getrandbits(24)])
    for s in (a, b):
        r = QPAttr()
        r.qp_state = e.IBV_QPS_RESET
        s.qp.modify(r, e.IBV_QP_STATE)
    connect_rc(a.qp, a.gidx, b.ctx.query_gid(1, int(b.gidx)), b.qp.qp_num, access, psn=psn,
               rd_atomic=16, timeout=12, retries=3)
    connect_rc(b.qp, b.gidx, a.ctx.query_gid(1, int(a.gidx)), a.qp.qp_num, access, psn=psn,
               rd_atomic=16, timeout=12, retries=3)
    for s in (a, b):
        for i in range(32):
            post_recv(s)


def post_recv(s):
    s.qp.post_recv(RecvWR(wr_id=99, num_sge=1, sg=[SGE(s.mr.buf + 60000, 4096, s.mr.lkey)]))


def live_qpns():
    out = subprocess.run(["rdma", "-j", "resource", "show", "qp"], capture_output=True,
                         text=True, check=True).stdout
    return [q["lqpn"] for q in json.loads(out)]


state_file = f"/tmp/fuzz-wire-{os.getpid()}.json"


def write_state():
    _, rq_a, sq_a = a.psns()
    _, rq_b, sq_b = b.psns()
    st = {"ip_a": ip_a, "ip_b": ip_b, "qpn_a": a.qp.qp_num, "qpn_b": b.qp.qp_num,
          "ud_a": a.ud.qp_num, "ud_b": b.ud.qp_num, "rq_psn_a": rq_a, "sq_psn_a": sq_a,
          "rq_psn_b": rq_b, "sq_psn_b": sq_b, "va_a": a.mr.buf, "va_b": b.mr.buf,
          "rkey_a": a.mr.rkey, "rkey_b": b.mr.rkey,
          "avoid": [q for q in live_qpns() if q not in (a.qp.qp_num, b.qp.qp_num,
                                                        a.ud.qp_num, b.ud.qp_num)]}
    tmp = state_file + ".new"
    with open(tmp, "w") as f:
        json.dump(st, f)
    os.replace(tmp, state_file)


def post(s, other):
    """One request from `s` to `other`: a READ, a WRITE, an atomic or a SEND."""
    kind = rng.randrange(4)
    off = rng.randrange(0, 8) * 4096
    n = rng.randrange(1, 8192)
    if kind == 3:
        w = SendWR(wr_id=kind, opcode=e.IBV_WR_SEND, num_sge=1,
                   sg=[SGE(s.mr.buf + off, min(n, 4096), s.mr.lkey)],
                   send_flags=e.IBV_SEND_SIGNALED)
    elif kind == 2:
        w = SendWR(wr_id=kind, opcode=e.IBV_WR_ATOMIC_FETCH_AND_ADD, num_sge=1,
                   sg=[SGE(s.mr.buf + 40000, 8, s.mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
        w.set_wr_atomic(other.mr.rkey, other.mr.buf + 40000 + 8 * rng.randrange(64), 1, 0)
    else:
        op = e.IBV_WR_RDMA_READ if kind == 0 else e.IBV_WR_RDMA_WRITE
        w = SendWR(wr_id=kind, opcode=op, num_sge=1, sg=[SGE(s.mr.buf + off, n, s.mr.lkey)],
                   send_flags=e.IBV_SEND_SIGNALED)
        w.set_wr_rdma(other.mr.rkey, other.mr.buf + off)
    s.qp.post_send(w)


connect()
write_state()
injectors = [subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, __file__, "--inject",
                               state_file, side, str(count // 2), str(seed * 2 + i)],
                              stdout=subprocess.PIPE, text=True)
             for i, (ns, side) in enumerate([(ns_a, "a"), (ns_b, "b")])]
done = {"ok": 0, "failed": 0, "reconnects": 0, "posted": 0}
inflight, last_state, last_done = 0, time.time(), time.time()
while any(p.poll() is None for p in injectors):
    for s in (a, b):
        n, wcs = s.cq.poll(16)
        for wc in wcs[:n]:
            if wc.qp_num != s.qp.qp_num:
                if wc.qp_num == s.ud.qp_num and wc.opcode & e.IBV_WC_RECV:
                    s.ud.post_recv(RecvWR(wr_id=wc.wr_id, num_sge=1,
                                          sg=[SGE(s.ud_mr.buf + 2048 * (wc.wr_id % 64), 2048,
                                                  s.ud_mr.lkey)]))
                continue
            last_done = time.time()
            if wc.opcode & e.IBV_WC_RECV:
                if wc.status == e.IBV_WC_SUCCESS:
                    post_recv(s)
                continue
            inflight -= 1
            done["ok" if wc.status == e.IBV_WC_SUCCESS else "failed"] += 1
    state_a = a.psns()[0]
    state_b = b.psns()[0]
    if e.IBV_QPS_ERR in (state_a, state_b) or (inflight > 0 and time.time() - last_done > 20):
        # Broken (as anybody who can name a connection can break it): connected anew.
        connect()
        inflight = 0
        done["reconnects"] += 1
        write_state()
        last_state = last_done = time.time()
        continue
    while inflight < 8:
        try:
            post(a, b) if rng.random() < 0.5 else post(b, a)
        except PyverbsError:
            break
        inflight += 1
        done["posted"] += 1
    if time.time() - last_state > 2:
        write_state()
        last_state = time.time()
    time.sleep(0.005)

sent = bad = bad_trusted = 0
for p in injectors:
    out, _ = p.communicate()
    if p.returncode != 0:
        sys.exit(f"an injector failed: {p.returncode}")
    r = json.loads(out.strip().splitlines()[-1])
    print("injector", json.dumps(r))
    sent += r["sent"]
    bad += r["bad_icrc"]
    bad_trusted += r["bad_icrc_trusted"]
os.unlink(state_file)
print("connection", json.dumps(done))
print("injected", sent)
print("bad_icrc", bad)
print("bad_icrc_trusted", bad_trusted)
