# SPDX-License-Identifier: GPL-2.0
# RoCEv2 packets built byte by byte, for tests that play a hostile peer:
# IPv4 and UDP headers, the BTH, extended headers, payload and pad, and the
# ICRC (CRC-32 over the packet with the fields routers change masked, as
# IBTA's annex 17 defines it).  send() puts a packet on the wire through a
# raw IPv4 socket (root), from whatever source address the packet names.
import socket
import struct
import zlib

ROCE_PORT = 4791

# Opcodes (RC unless noted).
RDMA_READ_REQUEST = 0x0C
SEND_ONLY = 0x04
ACKNOWLEDGE = 0x11
UD_SEND_ONLY = 0x64


def bth(opcode, dest_qp, psn, pkey=0xFFFF, se=False, pad=0, ack_req=False):
    return struct.pack(">BBHII", opcode, (se << 7) | (pad << 4), pkey, dest_qp & 0xFFFFFF,
                       (ack_req << 31) | (psn & 0xFFFFFF))


def reth(va, rkey, length):
    return struct.pack(">QII", va, rkey, length)


def feth(placement, selectivity):
    return struct.pack(">I", ((selectivity & 3) << 4) | (placement & 0xF))


def aeth(syndrome, msn):
    return struct.pack(">I", ((syndrome & 0xFF) << 24) | (msn & 0xFFFFFF))


def atomic_eth(va, rkey, swap_add, compare):
    return struct.pack(">QIQQ", va, rkey, swap_add, compare)


def atomic_ack(orig):
    return struct.pack(">Q", orig)


def imm(value):
    return struct.pack(">I", value)


def ieth(rkey):
    return struct.pack(">I", rkey)


# The extension headers after the BTH of every opcode IBTA defines (RC, UC, UD),
# in order, and whether it carries a payload: R(ETH), A(ETH), X (AtomicETH),
# K (AtomicAckETH), I(mmDt), V (IETH), D(ETH), F(ETH).
LAYOUT = {}
for base, ops in ((0x00, 0x18), (0x20, 0x0C)):
    for o in range(ops):
        hdrs, payload = {
            0x03: ("I", True), 0x05: ("I", True), 0x06: ("R", True), 0x09: ("I", True),
            0x0A: ("R", True), 0x0B: ("RI", True), 0x0C: ("R", False), 0x0D: ("A", True),
            0x0F: ("A", True), 0x10: ("A", True), 0x11: ("A", False), 0x12: ("AK", False),
            0x13: ("X", False), 0x14: ("X", False), 0x15: (None, False), 0x16: ("V", True),
            0x17: ("V", True),
        }.get(o, ("", True))
        if hdrs is not None:
            LAYOUT[base | o] = (hdrs, payload)
LAYOUT[0x1C] = ("FR", False)  # RC FLUSH
LAYOUT[0x1D] = ("R", True)   # RC ATOMIC_WRITE
LAYOUT[0x64] = ("D", True)   # UD SEND_ONLY
LAYOUT[0x65] = ("DI", True)  # UD SEND_ONLY_WITH_IMMEDIATE


def deth(qkey, src_qp):
    return struct.pack(">II", qkey, src_qp & 0xFFFFFF)


def icrc(packet):
    """The ICRC of an IPv4 RoCEv2 packet (without its ICRC)."""
    m = bytearray(packet[:20 + 8 + 12])
    m[1] = 0xFF                 # TOS
    m[8] = 0xFF                 # TTL
    m[10:12] = b"\xff\xff"      # header checksum
    m[26:28] = b"\xff\xff"      # UDP checksum
    if len(m) > 32:
        m[32] = 0xFF            # BTH: FECN, BECN, reserved (a fuzzer's packet may lack it)
    crc = zlib.crc32(b"\xff" * 8 + bytes(m) + packet[40:])
    return struct.pack("<I", crc)


def ipv4_packet(src, dst, transport, sport=0xC001, ip_id=1, good_icrc=True):
    """An IPv4 packet to UDP 4791 carrying `transport` (BTH onwards) and its ICRC."""
    udp_len = 8 + len(transport) + 4
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, ip_id, 0x4000, 64, 17, 0,
                     socket.inet_aton(src), socket.inet_aton(dst))
    udp = struct.pack(">HHHH", sport, ROCE_PORT, udp_len, 0)
    body = ip + udp + transport
    crc = icrc(body)
    if not good_icrc:
        crc = bytes(b ^ 0xFF for b in crc)
    return body + crc


class TrainSender:
    """A UDP socket of the namespace it is made in that sends trains: UDP GSO
    datagrams (UDP_SEGMENT) to port 4791, which a veth passes whole.  Not
    connected and with don't-fragment set, so the kernel gives each datagram
    the IPv4 identification 0 (ip_select_ident_segs()), and piece i carries
    i once cut: train_piece() can make each piece's ICRC good."""

    UDP_SEGMENT = 103               # <linux/udp.h>
    IP_MTU_DISCOVER, IP_PMTUDISC_DO = 10, 2     # <linux/in.h>

    def __init__(self, src, sport):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.IPPROTO_IP, self.IP_MTU_DISCOVER, self.IP_PMTUDISC_DO)
        self.sock.bind((src, sport))
        self.sport = sport

    def send(self, dst, data, segment):
        self.sock.setsockopt(socket.SOL_UDP, self.UDP_SEGMENT, segment)
        self.sock.sendto(data, (dst, ROCE_PORT))


def train_piece(src, dst, sport, index, transport, good_icrc=True):
    """`transport` (BTH onwards) and the ICRC it needs as piece `index` of a
    TrainSender's train, whose pieces are cut from a datagram of
    identification 0."""
    return ipv4_packet(src, dst, transport, sport=sport, ip_id=index & 0xFFFF,
                       good_icrc=good_icrc)[28:]


class Sender:
    """A raw IPv4 socket of the namespace it is made in (IP_HDRINCL)."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)

    def send(self, packet):
        dst = socket.inet_ntoa(packet[16:20])
        self.sock.sendto(packet, (dst, 0))
