#!/usr/bin/env python3
"""nfq-delay.py QUEUE DELAY_MS — hold every packet iptables sends to NFQUEUE QUEUE for DELAY_MS,
then let it go: a fixed one-way latency, for kernels built without sch_netem (`tc qdisc add …
netem` answers "Specified qdisc kind is unknown" on the chaos machine's kernel).

Run inside the network namespace whose rules queue the packets (`ip netns exec NS python3 …`).
Speaks nfnetlink_queue over a raw netlink socket (no libnetfilter_queue needed): bind the queue,
ask for packet metadata only (the verdict does not need the payload), and answer each packet id
with NF_ACCEPT once its time has come. Packets leave in arrival order (the delay is constant).

Prints `READY` once bound; on SIGTERM or stdin closing prints `DELAYED <n>` (packets held) and
exits, after accepting whatever it still holds.
"""
import heapq
import os
import select
import signal
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_VERDICT, NFQNL_MSG_CONFIG = 0, 1, 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS = 1, 2
NFQNL_CFG_CMD_BIND = 1
NFQNL_COPY_META = 1
NFQA_PACKET_HDR, NFQA_VERDICT_HDR = 1, 2
NF_ACCEPT = 1
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2


def attr(kind, payload):
    length = 4 + len(payload)
    return struct.pack('=HH', length, kind) + payload + b'\0' * ((4 - length % 4) % 4)


def message(msg, queue, attrs, flags=NLM_F_REQUEST):
    body = struct.pack('=BBH', socket.AF_UNSPEC, 0, socket.htons(queue)) + b''.join(attrs)
    return struct.pack('=IHHII', 16 + len(body), (NFNL_SUBSYS_QUEUE << 8) | msg, flags, 0, 0) + body


def main():
    queue, delay_s = int(sys.argv[1]), int(sys.argv[2]) / 1000.0
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
    sock.bind((0, 0))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.send(message(NFQNL_MSG_CONFIG, queue, [attr(NFQA_CFG_CMD, struct.pack('=BxH', NFQNL_CFG_CMD_BIND, socket.htons(socket.AF_INET)))], NLM_F_REQUEST | NLM_F_ACK))
    sock.send(message(NFQNL_MSG_CONFIG, queue, [attr(NFQA_CFG_PARAMS, struct.pack('>IB', 0, NFQNL_COPY_META))], NLM_F_REQUEST | NLM_F_ACK))
    held = []  # (release time, packet id)
    delayed = 0
    stopping = False

    def stop(*_):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    print('READY', flush=True)
    stdin = sys.stdin.fileno()
    while not stopping:
        now = time.monotonic()
        while held and held[0][0] <= now:
            _, pid = heapq.heappop(held)
            sock.send(message(NFQNL_MSG_VERDICT, queue, [attr(NFQA_VERDICT_HDR, struct.pack('>II', NF_ACCEPT, pid))]))
        timeout = max(0.0, held[0][0] - now) if held else 0.5
        try:
            ready, _, _ = select.select([sock, stdin], [], [], timeout)
        except InterruptedError:
            continue
        if stdin in ready and not os.read(stdin, 4096):
            break
        if sock not in ready:
            continue
        data = sock.recv(1 << 16)
        offset = 0
        while offset + 16 <= len(data):
            length, kind = struct.unpack_from('=IH', data, offset)
            if kind == NLMSG_ERROR:
                code = struct.unpack_from('=i', data, offset + 16)[0]
                if code != 0:
                    print(f'nfq-delay: netlink error {code}', file=sys.stderr, flush=True)
                    sys.exit(1)
            elif kind == (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
                a = offset + 20
                while a + 4 <= offset + length:
                    alen, atype = struct.unpack_from('=HH', data, a)
                    if atype & 0x7FFF == NFQA_PACKET_HDR:
                        pid = struct.unpack_from('>I', data, a + 4)[0]
                        heapq.heappush(held, (time.monotonic() + delay_s, pid))
                        delayed += 1
                    a += (alen + 3) & ~3
            offset += (length + 3) & ~3
    for _, pid in held:
        sock.send(message(NFQNL_MSG_VERDICT, queue, [attr(NFQA_VERDICT_HDR, struct.pack('>II', NF_ACCEPT, pid))]))
    print(f'DELAYED {delayed}', flush=True)


if __name__ == '__main__':
    main()
