#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Captures the RoCEv2 packets a netdev sends and receives, and checks that each
is a standard one, as any RoCEv2 receiver (rdma_rxe, a NIC) takes it.

  roce-capture.py NETDEV MTU

Runs until SIGTERM or SIGINT, then prints one line:

  packets N bad B datagrams D longest L dropped X

N: RoCEv2 packets (UDP to port 4791) no longer than MTU, each checked: IPv4
without options and not a fragment, or IPv6; IP and UDP lengths that agree
with the bytes; BTH transport version 0 and a pad that fits; and the ICRC
(CRC-32 over the packet with the fields routers change masked, IBTA annex
17), computed here on its own.  B: those that failed (each printed to
stderr).  D: UDP datagrams to port 4791 longer than MTU: a train the stack
had not cut yet where the capture saw it (a veth passes one whole; its
receiver cuts it); they are counted, not checked.  L: the longest IP packet
seen.  X: packets the capture's socket had no room for (not seen).
"""
import signal
import socket
import struct
import sys
import zlib

ROCE_PORT = 4791
ETH_P_ALL = 0x0003
SO_RCVBUFFORCE = 33
SOL_PACKET = 263
PACKET_STATISTICS = 6


def icrc(ip, ipv6):
    """The ICRC of the packet ip (IP header to the end of the pad)."""
    hlen = 40 if ipv6 else 20
    m = bytearray(ip[:hlen + 8 + 12])
    if ipv6:
        m[0] |= 0x0F
        m[1] = m[2] = m[3] = 0xFF
        m[7] = 0xFF
    else:
        m[1] = 0xFF
        m[8] = 0xFF
        m[10] = m[11] = 0xFF
    m[hlen + 6] = m[hlen + 7] = 0xFF
    m[hlen + 8 + 4] = 0xFF
    return zlib.crc32(b"\xff" * 8 + bytes(m) + ip[hlen + 8 + 12:]) & 0xFFFFFFFF


def check(ip):
    """None if ip (IP header on, link padding possibly after) is a good
    RoCEv2 packet, else why not."""
    version = ip[0] >> 4
    if version == 4:
        if ip[0] & 0xF != 5:
            return "IPv4 options"
        tot = struct.unpack(">H", ip[2:4])[0]
        if struct.unpack(">H", ip[6:8])[0] & 0x3FFF:
            return "IPv4 fragment"
        if struct.unpack(">H", ip[6:8])[0] & 0x4000 == 0:
            return "IPv4 without don't-fragment"
        hlen, ipv6 = 20, False
    else:
        tot = 40 + struct.unpack(">H", ip[4:6])[0]
        hlen, ipv6 = 40, True
    if tot > len(ip) or tot < hlen + 8 + 12 + 4:
        return "IP length %d, %d bytes" % (tot, len(ip))
    ip = ip[:tot]
    udp_len = struct.unpack(">H", ip[hlen + 4:hlen + 6])[0]
    if udp_len != tot - hlen:
        return "UDP length %d, IP says %d" % (udp_len, tot - hlen)
    bth = ip[hlen + 8:hlen + 20]
    if bth[1] & 0x0F != 0:
        return "transport version %d" % (bth[1] & 0x0F)
    pad = (bth[1] >> 4) & 3
    if tot - hlen - 8 - 12 - 4 < pad:
        return "pad %d longer than what follows the BTH" % pad
    want = icrc(ip[:-4], ipv6)
    got = struct.unpack("<I", ip[-4:])[0]
    if want != got:
        return "ICRC %08x, computed %08x" % (got, want)
    return None


def main():
    netdev, mtu = sys.argv[1], int(sys.argv[2])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    # Room for what the streams send while this is slow (TCG): past rmem_max (root).
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 64 << 20)
    s.bind((netdev, 0))
    s.settimeout(0.2)
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(1))
    print("capturing", flush=True)
    packets = bad = datagrams = longest = 0
    while not stop:
        try:
            frame = s.recv(1 << 17)
        except socket.timeout:
            continue
        except InterruptedError:
            continue
        if len(frame) < 14:
            continue
        ethertype = struct.unpack(">H", frame[12:14])[0]
        ip = frame[14:]
        if ethertype == 0x0800 and len(ip) >= 28 and ip[9] == 17:
            hlen = (ip[0] & 0xF) * 4
            length = struct.unpack(">H", ip[2:4])[0]
        elif ethertype == 0x86DD and len(ip) >= 48 and ip[6] == 17:
            hlen = 40
            length = 40 + struct.unpack(">H", ip[4:6])[0]
        else:
            continue
        if len(ip) < hlen + 8 or struct.unpack(">H", ip[hlen + 2:hlen + 4])[0] != ROCE_PORT:
            continue
        longest = max(longest, length)
        if length > mtu:
            datagrams += 1
            continue
        packets += 1
        why = check(ip)
        if why:
            bad += 1
            if bad <= 10:
                print("bad packet (%s): %s" % (why, ip[:64].hex()), file=sys.stderr)
    # struct tpacket_stats: packets, drops (since the last read).
    _, drops = struct.unpack("II", s.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
    print("packets %d bad %d datagrams %d longest %d dropped %d"
          % (packets, bad, datagrams, longest, drops), flush=True)


main()
