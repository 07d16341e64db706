#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Summarise ferroce benchmark results: medians, ratios, charts.

Reads DIR/results.jsonl (written by qemu/bench/run in the guest, and by
qemu/bench/pair in two guests: run-host appends its pair_* rows), prints a
table of medians per test and MTU with each device's ratio against the
anchors (rxe, siw, and for the two-guest rows kernel TCP between the same
guests), writes it to DIR/summary.txt and draws DIR/table.png (the table as
bars) and DIR/sweep.png (ib_write_bw bandwidth against message size).

Under TCG only ratios within one run mean anything: absolute figures depend
on the host.  The pair_* rows come from another boot (two guests) than the
rest: compare them with each other.
"""

import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

TABLE_TESTS = [
    ("ib_write_bw", 65536),
    ("ib_send_bw", 65536),
    ("ib_read_bw", 65536),
    ("ib_write_lat", 2),
    # Between two devices of a driver, through the IP stack.
    ("wire_ib_write_bw", 65536),
    ("wire_ib_send_bw", 65536),
    ("wire_ib_read_bw", 65536),
    ("wire_ib_write_lat", 2),
    # Their anchors, kernel TCP and UDP on the same veth (iperf3, qperf).
    ("wire_tcp_bw", 65536),
    ("wire_udp_bw", 1024),
    ("wire_tcp_lat", 2),
    # NVMe over Fabrics (the kernel's target and host on one device), fio.
    ("nvme_randread", 4096),
    ("nvme_randwrite", 4096),
    ("nvme_read", 131072),
    ("nvme_write", 131072),
    # Between two guests (qemu/pair), a device on each end of one link, and
    # the anchor of these rows: kernel TCP (iperf3) over the same link.
    ("pair_ib_write_bw", 65536),
    ("pair_ib_send_bw", 65536),
    ("pair_ib_read_bw", 65536),
    ("pair_ib_write_lat", 2),
    ("pair_tcp_bw", 65536),
]
# The MTUs a test runs at (the NVMe rows: only 9000; the two-guest rows:
# only the link's 1500).
MTUS = {"nvme_": (9000,), "pair_": (1500,)}


def mtus(test):
    return next((m for p, m in MTUS.items() if test.startswith(p)), (1500, 9000))


# The drivers others are compared with ("tcp": kernel TCP, wire and pair rows).
ANCHORS = ["rxe", "siw", "tcp"]
# An anchor whose figure for a test is in another row: (anchor, test) ->
# (test, size) of that row.  TCP's bandwidth on the same link is iperf3's
# (wire_tcp_bw, pair_tcp_bw), what a device's bandwidth rows are held
# against; its latency qperf's tcp_lat (wire_tcp_lat).
ANCHOR_ROWS = {
    **{("tcp", f"wire_ib_{t}_bw"): ("wire_tcp_bw", 65536) for t in ("write", "send", "read")},
    ("tcp", "wire_ib_write_lat"): ("wire_tcp_lat", 2),
    **{("tcp", f"pair_ib_{t}_bw"): ("pair_tcp_bw", 65536) for t in ("write", "send", "read")},
}


def load(path):
    rows = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                rows.append(json.loads(line))
    return rows


def medians(rows):
    """(test, size, mtu) -> driver -> (median, unit, runs)."""
    values = defaultdict(list)
    units = {}
    for r in rows:
        if r["test"].endswith("_sweep"):
            continue
        key = (r["test"], r["size"], r["mtu"], r["driver"])
        values[key].append(float(r["value"]))
        units[key] = r["unit"]
    out = defaultdict(dict)
    for (test, size, mtu, driver), vals in values.items():
        out[(test, size, mtu)][driver] = (
            statistics.median(vals),
            units[(test, size, mtu, driver)],
            len(vals),
        )
    return out


def ratio(test, mine, anchor):
    """How many times better `mine` is than `anchor` (latency: lower wins)."""
    if not anchor or not mine:
        return None
    return anchor / mine if test.endswith("_lat") else mine / anchor


def ratio_pairs(drivers):
    """(device, anchor) pairs to compare: each new device against each
    anchor, or, when only the anchors ran, siw against rxe and rxe against
    TCP."""
    pairs = [
        (d, a) for d in drivers if d not in ANCHORS for a in ANCHORS if a in drivers
    ]
    if not pairs:
        pairs = [
            (d, a) for d, a in [("siw", "rxe"), ("rxe", "tcp")] if d in drivers and a in drivers
        ]
    return pairs


def anchor_median(med, anchor, test, size, mtu):
    """The anchor's median that the row (test, size, mtu) is compared with."""
    test, size = ANCHOR_ROWS.get((anchor, test), (test, size))
    return med.get((test, size, mtu), {}).get(anchor, (None,))[0]


def table(med, drivers):
    rows = [
        (test, size, mtu, med[(test, size, mtu)])
        for test, size in TABLE_TESTS
        for mtu in mtus(test)
        if med.get((test, size, mtu))
    ]

    def row_ratio(row, d, a):
        test, size, mtu, cells = row
        return ratio(test, cells.get(d, (None,))[0], anchor_median(med, a, test, size, mtu))

    # A ratio column that no row fills (a device and an anchor that never
    # ran the same tests, e.g. a wire-only device against TCP) is left out.
    pairs = [p for p in ratio_pairs(drivers) if any(row_ratio(row, *p) for row in rows)]
    lines = []
    head = f"{'test':<18}{'size':>7}{'MTU':>6}"
    for d in drivers:
        head += f"{d:>13}"
    for d, a in pairs:
        head += f"{d + '/' + a:>17}"
    lines.append(head)
    for row in rows:
        test, size, mtu, cells = row
        unit = next(iter(cells.values()))[1]
        line = f"{test:<18}{size:>7}{mtu:>6}"
        for d in drivers:
            line += f"{cells[d][0]:>13.2f}" if d in cells else f"{'-':>13}"
        for d, a in pairs:
            r = row_ratio(row, d, a)
            line += f"{r:>16.2f}x" if r else f"{'-':>17}"
        lines.append(line + f"  {unit}")
    lines.append("")
    lines.append(
        "Medians of the runs of each test; a ratio d/a > 1 means d beats a "
        "(higher bandwidth, lower latency)."
    )
    if any(row[0].startswith("wire_tcp_") for row in rows):
        lines.append(
            "d/tcp on the wire_ib_* rows holds d against kernel TCP on the ferroce pair's veth: "
            "bandwidth against wire_tcp_bw (iperf3, the receiver's MB/s), latency against "
            "wire_tcp_lat (qperf tcp_lat)."
        )
    if any(row[0].startswith("pair_") for row in rows):
        lines.append(
            "pair_*: between two guests on one link, measured in another boot than the other "
            "rows: compare them with each other"
            + (
                "; d/tcp holds d's pair_ib_*_bw against kernel TCP's pair_tcp_bw (iperf3, "
                "the receiver's MB/s) between the same two guests."
                if any(a == "tcp" for _, a in pairs)
                else "."
            )
        )
    return "\n".join(lines)


def draw_table(med, drivers, path):
    rows = (len(TABLE_TESTS) + 3) // 4
    fig, axes = plt.subplots(rows, 4, figsize=(16, 4 * rows), squeeze=False)
    for ax in axes.flat[len(TABLE_TESTS):]:
        ax.set_visible(False)
    for ax, (test, size) in zip(axes.flat, TABLE_TESTS):
        every = mtus(test)
        # The bars of the drivers that ran the test, each in its colour of every chart.
        ran = [
            (i, d)
            for i, d in enumerate(drivers)
            if any(d in med.get((test, size, m), {}) for m in every)
        ]
        width = 0.8 / max(len(ran), 1)
        unit = ""
        for j, (i, d) in enumerate(ran):
            ys = []
            for mtu in every:
                cell = med.get((test, size, mtu), {}).get(d)
                ys.append(cell[0] if cell else 0)
                if cell:
                    unit = cell[1]
            ax.bar([x + j * width for x in range(len(every))], ys, width, label=d, color=f"C{i}")
        ax.set_xticks([x + width * (len(ran) - 1) / 2 for x in range(len(every))])
        ax.set_xticklabels([f"MTU {m}" for m in every])
        ax.set_title(f"{test} {size} B")
        ax.set_ylabel(unit + (" (lower is better)" if test.endswith("_lat") else ""))
        if ran:
            ax.legend()
    fig.suptitle(
        "perftest medians: loopback on one device, wire_* between two; "
        "nvme_*: NVMe/RDMA with fio on one device;\npair_*: between two guests, "
        "tcp their anchor (QEMU TCG guests: compare ratios only)"
    )
    # (Room at the top for the two lines of the title.)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.6 / fig.get_figheight()))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def draw_sweep(rows, path):
    curves = defaultdict(list)
    for r in rows:
        if r["test"] == "ib_write_bw_sweep":
            curves[r["driver"]].append((r["size"], float(r["value"])))
    fig, ax = plt.subplots(figsize=(8, 5))
    for d, pts in sorted(curves.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=d)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("ib_write_bw BW average (MB/s)")
    ax.set_title("ib_write_bw vs message size, MTU 9000 (QEMU TCG guest)")
    ax.grid(True, which="both", alpha=0.3)
    if curves:
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "out/bench")
    rows = load(out / "results.jsonl") if (out / "results.jsonl").exists() else []
    if not rows:
        sys.exit("report.py: no results")
    present = sorted({r["driver"] for r in rows})
    drivers = [d for d in ["ferroce", "rxe", "siw"] if d in present]
    drivers += [d for d in present if d not in drivers]
    med = medians(rows)
    text = table(med, drivers)
    print(text)
    (out / "summary.txt").write_text(text + "\n")
    draw_table(med, drivers, out / "table.png")
    draw_sweep(rows, out / "sweep.png")
    print(f"raw: {out / 'results.jsonl'}  charts: {out / 'table.png'}, {out / 'sweep.png'}")
    # A device runs the tests of a kind (loopback, wire_*, nvme_*, pair_*; TCP only
    # wire_tcp_*, wire_udp_* and pair_tcp_*) or none of them (a wire device no loopback test; FERROCE_BENCH_SECTIONS may
    # leave kinds out): a cell is missing where a device has figures of that kind but not this one.
    def kind(test):
        kinds = ("wire_tcp_", "wire_udp_", "wire_", "nvme_", "pair_tcp_", "pair_")
        return next((p for p in kinds if test.startswith(p)), "")

    ran = {(kind(t), d) for (t, _, _), cells in med.items() for d in cells}
    missing = [
        (t, s, m, d)
        for t, s in TABLE_TESTS
        for m in mtus(t)
        for d in drivers
        if (kind(t), d) in ran and d not in med.get((t, s, m), {})
    ]
    if missing:
        sys.exit(f"report.py: {len(missing)} measurements failed: {missing}")


if __name__ == "__main__":
    main()
