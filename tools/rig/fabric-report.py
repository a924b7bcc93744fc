#!/usr/bin/python3
"""Reports the fabric benchmark (tools/rig/fabric-bench.sh): for each
fabric, opensm's setting and figure, the median of each driver's rounds
and the C/rust ratio, the median of the rounds' own ratios with their
spread (the lowest and highest round), as a Markdown table; and a chart of
the time to SUBNET UP and of a light sweep against the fabric's nodes, for
both drivers. It measures; it does not judge.

    fabric-report.py <serial log> <prefix>

Reads the guest's "@@fabric <driver> <round> <fabric>/<setting> <figure>
<value> <unit>" lines; writes <prefix>.md and <prefix>.png.
"""
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

DRIVERS = ("c", "rust")
LABELS = {"c": "C ib_umad", "rust": "ib_umad_rs"}
# The figures in the table's order; all are lower-is-better.
FIGURES = ("subnet_up", "light_sweep", "mads", "timeouts", "resent", "dropped",
           "opensm_user_cpu_per_mad", "opensm_system_cpu_per_mad", "kernel_cpu_per_mad",
           "slab_peak")


def read(log):
    """Each (run, figure)'s values by driver and round, and its unit."""
    values, units = {}, {}
    for line in open(log, errors="replace"):
        f = line.split()
        if len(f) == 7 and f[0] == "@@fabric" and f[1] in DRIVERS:
            values.setdefault((f[3], f[4]), {}).setdefault(f[1], {})[int(f[2])] = float(f[5])
            units[f[3], f[4]] = f[6]
    return values, units


def median(by_round):
    return statistics.median(by_round.values())


def ratio(by):
    """The C/rust ratios of the rounds that have both: their median,
    lowest and highest (1 where both are 0); None where no round has
    both."""
    c, rust = by.get("c", {}), by.get("rust", {})
    ratios = [c[n] / rust[n] if rust[n] else (1.0 if c[n] == 0 else float("inf"))
              for n in sorted(c.keys() & rust.keys())]
    if not ratios:
        return None
    return statistics.median(ratios), min(ratios), max(ratios)


def run_key(run, nodes):
    fabric, _, setting = run.partition("/")
    return nodes.get(run, 0), setting, fabric


def main():
    log, prefix = sys.argv[1:3]
    values, units = read(log)
    runs = {run for run, _ in values}
    nodes = {run: max(median(by) for by in values[run, "nodes"].values())
             for run in runs if (run, "nodes") in values}
    rows = ["| fabric | nodes | opensm | figure | C ib_umad | ib_umad_rs | C/rust [spread] | rounds |",
            "|---|---:|---|---|---:|---:|---|---:|"]
    for run in sorted(runs, key=lambda r: run_key(r, nodes)):
        fabric, _, setting = run.partition("/")
        for figure in FIGURES:
            by = values.get((run, figure))
            if not by:
                continue
            c = median(by["c"]) if "c" in by else float("nan")
            rust = median(by["rust"]) if "rust" in by else float("nan")
            r = ratio(by)
            spread = f"{r[0]:.3f} [{r[1]:.3f}–{r[2]:.3f}]" if r else "-"
            rounds = len(by.get("c", {}).keys() & by.get("rust", {}).keys())
            rows.append(f"| {fabric} | {nodes.get(run, 0):.0f} | {setting} | "
                        f"{figure} ({units[run, figure]}) | {c:g} | {rust:g} | {spread} | {rounds} |")
    table = "\n".join(rows)
    print("The fabric benchmark: medians of each driver's rounds; C/rust is the median of")
    print("the rounds' own ratios (> 1: ib_umad_rs lower), its spread the lowest and")
    print("highest round's. Every figure is better lower.")
    print(table)
    with open(f"{prefix}.md", "w") as out:
        out.write(table + "\n")

    settings = sorted({run.partition("/")[2] for run in runs})
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.5))
    for ax, figure, what in zip(axes, ("subnet_up", "light_sweep"),
                                ("time to SUBNET UP", "time of a light sweep")):
        for setting in settings:
            points = sorted(((nodes.get(run, 0), values[run, figure]) for run in runs
                             if run.partition("/")[2] == setting and (run, figure) in values),
                            key=lambda point: point[0])
            for d, style in zip(DRIVERS, ("o--", "s-")):
                xs = [n for n, by in points if d in by]
                ys = [median(by[d]) / 1000 for n, by in points if d in by]
                ax.plot(xs, ys, style, label=f"{LABELS[d]}, {setting.replace('smps', 'max_wire_smps ')}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("nodes in the fabric")
        ax.set_ylabel(f"{what} (s)")
        ax.set_title(what)
        ax.grid(True, which="both", alpha=0.3)
        if ax.lines:
            ax.legend(fontsize="small")
    fig.suptitle("opensm on ibsim's fabrics through each driver, Debian's 7.3 (TCG)")
    fig.tight_layout()
    fig.savefig(f"{prefix}.png", dpi=110)
    print(f"table: {prefix}.md; chart: {prefix}.png")


if __name__ == "__main__":
    main()
