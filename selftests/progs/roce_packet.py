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


def deth(qkey, src_qp):
    return struct.pack(">II", qkey, src_qp & 0xFFFFFF)


def icrc(packet):
    """The ICRC of an IPv4 RoCEv2 packet (without its ICRC)."""
    m = bytearray(packet[:20 + 8 + 12])
    m[1] = 0xFF                 # TOS
    m[8] = 0xFF                 # TTL
    m[10:12] = b"\xff\xff"      # header checksum
    m[26:28] = b"\xff\xff"      # UDP checksum
    m[32] = 0xFF                # BTH: FECN, BECN, reserved
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


class Sender:
    """A raw IPv4 socket of the namespace it is made in (IP_HDRINCL)."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)

    def send(self, packet):
        dst = socket.inet_ntoa(packet[16:20])
        self.sock.sendto(packet, (dst, 0))
