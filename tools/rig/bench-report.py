#!/usr/bin/python3
"""Reports a benchmark boot (tools/rig/bench.sh): the medians of each
figure per driver and the rust/C ratios, as a table, and two charts: the
cost of a write against the requests outstanding, per driver and device,
and the rust/C ratio of every figure. It measures; it does not judge.

    bench-report.py <title> <serial log> <chart prefix>

Reads the guest's "@@bench <driver> <device>/<figure> <value> <unit>" lines;
writes <chart prefix>-outstanding.png and <chart prefix>-ratios.png.

A figure's rust/C is the median of its rounds' own ratios, not the ratio
of the two medians: a round runs both drivers one after the other in the
same boot, and some figures shift by round for both alike (on rxe the
flood comes in rounds of about 13000 and about 15300 MADs/s), which the
ratio of medians turns into a few percent either way as the rounds split.
"""
import re
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

DRIVERS = ("c", "rust")
LABELS = {"c": "C ib_umad", "rust": "ib_umad_rs"}
OUTSTANDING = re.compile(r"^(.*)/outstanding_(\d+)$")


def lower_is_better(name, unit):
    return unit in ("us", "bytes") or name.endswith("_lost")


def read(log):
    """Each figure's values by driver, in round order, and the vCPUs of the
    guest that measured it (a log may hold several boots)."""
    runs, cpus, figure_cpus = {}, "?", {}
    for line in open(log, errors="replace"):
        f = line.split()
        if len(f) == 5 and f[0] == "@@bench" and f[1] in DRIVERS:
            runs.setdefault((f[2], f[4]), {}).setdefault(f[1], []).append(float(f[3]))
            figure_cpus[f[2], f[4]] = cpus
        elif f[:2] == ["@@rig", "cpus"] and len(f) == 3:
            cpus = f[2]
    return runs, figure_cpus


def main():
    title, log, prefix = sys.argv[1:4]
    runs, cpus = read(log)
    medians = {key: {d: statistics.median(by[d]) for d in DRIVERS if d in by}
               for key, by in runs.items()}
    print(f"{title} (medians of each figure's rounds; CPUs: the guest's vCPUs)")
    print(f"{'benchmark':<40} {'CPUs':>4} {'rounds':>6} {'C ib_umad':>12} {'ib_umad_rs':>12} "
          f"{'rust/C':>8}")
    ratios = []
    for (name, unit), by in sorted(medians.items()):
        c, rust = by.get("c", 0), by.get("rust", 0)
        paired = [r / c_ for c_, r in zip(runs[name, unit].get("c", []),
                                          runs[name, unit].get("rust", [])) if c_]
        ratio = statistics.median(paired) if paired else float("nan")
        better = "lower is better" if lower_is_better(name, unit) else "higher is better"
        print(f"{name + ' (' + unit + ')':<40} {cpus[name, unit]:>4} {len(paired):>6} "
              f"{c:>12.2f} {rust:>12.2f} {ratio:>8.3f}  {better}")
        if paired:
            ratios.append((name, ratio, lower_is_better(name, unit)))

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for device in sorted({OUTSTANDING.match(n).group(1) for n, _ in medians if OUTSTANDING.match(n)}):
        points = sorted((int(OUTSTANDING.match(n).group(2)), by) for (n, _), by in medians.items()
                        if OUTSTANDING.match(n) and OUTSTANDING.match(n).group(1) == device)
        for d, style in zip(DRIVERS, ("o--", "s-")):
            xs = [n for n, by in points if d in by]
            ax.plot(xs, [by[d] for n, by in points if d in by], style,
                    label=f"{LABELS[d]}, {device}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("requests outstanding on the file")
    ax.set_ylabel("cost of one more write (us of the writer's CPU time)")
    ax.set_title(f"{title}\nwrite cost against outstanding requests")
    ax.grid(True, which="both", alpha=0.3)
    if ax.lines:
        ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(f"{prefix}-outstanding.png", dpi=110)

    fig, ax = plt.subplots(figsize=(7, 0.28 * len(ratios) + 1.5))
    # Plotted as "how much better": C/rust for costs, rust/C for rates.
    ahead = [1 / r if lower else r for _, r, lower in ratios]
    ax.barh([n for n, _, _ in ratios], ahead,
            color=["tab:green" if a >= 1 else "tab:red" for a in ahead])
    ax.set_xscale("log")
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.invert_yaxis()
    ax.set_xlabel("ib_umad_rs against C (> 1: ib_umad_rs ahead)")
    # One line a part: the title is wider than the chart.
    ax.set_title(title.replace(", ", ",\n"), fontsize="medium")
    ax.tick_params(axis="y", labelsize="small")
    fig.tight_layout()
    fig.savefig(f"{prefix}-ratios.png", dpi=110)
    print(f"charts: {prefix}-outstanding.png {prefix}-ratios.png")


if __name__ == "__main__":
    main()
