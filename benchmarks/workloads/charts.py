"""The suite's pictures (matplotlib, optional): ratios to hand NumPy, and W4's scaling."""

from __future__ import annotations

from .common import SHORT_LABELS


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def ratios(results: dict, path: str) -> None:
    """One panel per workload: each way's ratio to hand NumPy, on a log axis."""
    plt = _pyplot()
    from matplotlib import ticker

    workloads = [(key, wl) for key, wl in results["workloads"].items() if wl.get("ways")]
    height = 0.8 + sum(0.28 * len(wl["ways"]) + 0.7 for _, wl in workloads)
    fig, axes = plt.subplots(len(workloads), 1, figsize=(9, height), squeeze=False,
                             height_ratios=[len(wl["ways"]) + 1.5 for _, wl in workloads],
                             layout="constrained")
    for ax, (key, wl) in zip(axes[:, 0], workloads):
        ways = [(SHORT_LABELS.get(name, name), w) for name, w in wl["ways"].items()]
        labels = [label for label, _ in ways]
        values = [w.get("ratio") or w.get("ratio_lower_bound") or 0 for _, w in ways]
        colors = ["0.55" if name == "hand_numpy" else
                  "tab:blue" if name.startswith("staticgrad") else "tab:orange"
                  for name in wl["ways"]]
        bars = ax.barh(range(len(ways)), values, color=colors)
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
        shown = [v for v in values if v]
        few_decades = shown and max(shown) / min(shown) < 20  # label the minor ticks too
        ax.xaxis.set_minor_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}x")
                                     if few_decades else ticker.NullFormatter())
        ax.tick_params(axis="x", which="minor", labelsize=7)
        ax.axvline(1.0, color="k", lw=0.8, ls="--")
        ax.set_yticks(range(len(ways)), labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_title(f"{key}: {wl['title']}", fontsize=9, loc="left")
        for bar, (_, w), value in zip(bars, ways, values):
            text = ("failed" if "error" in w else "skipped" if "skipped" in w else
                    f"> {value:.3g}x" if w.get("ratio") is None and value else f"{value:.3g}x")
            ax.text(value or 1.0, bar.get_y() + bar.get_height() / 2, " " + text,
                    va="center", fontsize=7)
    axes[-1, 0].set_xlabel("time (W1-W4) or peak memory (W5), as a ratio to hand NumPy "
                           "(log scale; lower is better)")
    fig.savefig(path, dpi=110)
    plt.close(fig)


def scaling(w4: dict, path: str) -> None:
    """W4: seconds against N, log-log, one line per way; stopped runs drawn as a lower bound."""
    plt = _pyplot()
    from matplotlib import ticker

    fig, ax = plt.subplots(figsize=(8.5, 4.5))
    for name, by_n in w4["scaling"].items():
        label = SHORT_LABELS.get(name, name)
        points = [(int(n), r["seconds"]) for n, r in by_n.items() if r.get("seconds")]
        stopped = [(int(n), r["over_s"]) for n, r in by_n.items() if r.get("over_s")]
        if not points and not stopped:
            continue
        style = "-" if name.startswith("staticgrad") else "--" if name != "hand_numpy" else ":"
        line, = ax.plot(*zip(*points), style, marker="o", label=label) if points else \
            ax.plot([], [], style, marker="o", label=label)
        for n, over in stopped:
            ax.plot([n], [over], marker="^", color=line.get_color(), ms=9)
            ax.annotate(f"> {over:.0f} s", (n, over), textcoords="offset points", xytext=(5, 5),
                        fontsize=7, color=line.get_color())
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xticks(w4["sizes"], [f"{n:,}" for n in w4["sizes"]])
    ax.xaxis.set_minor_locator(ticker.NullLocator())
    ax.set_xlabel("N (elementwise ops in the chain)")
    ax.set_ylabel("build + differentiate + compile + first run (s)")
    ax.set_title("W4: compile-time scaling (^ = stopped at the cap)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
