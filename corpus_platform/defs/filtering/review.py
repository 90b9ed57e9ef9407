"""What a reviewer sees of the filter stage in the UI: the funnel and samples per filter."""

import base64
import io
from collections import Counter

from corpus_platform.base.charts import pyplot
from corpus_platform.kernels.filtering.stage import SAMPLES_PER_FILTER, FilterSummary, Sample


def funnel_markdown(
    rows_in: int, removed: Counter[str], would_fail: Counter[str], replaced: Counter[str]
) -> str:
    """Rows in, removed per filter (first failure and would-fail), rows out, as a table."""
    lines = ["| filter | removed (first failure) | would fail |", "|---|---:|---:|"]
    for name in sorted(set(removed) | set(would_fail), key=lambda n: (-removed[n], n)):
        lines.append(f"| {name} | {removed[name]} | {would_fail[name]} |")
    edits = ", ".join(f"{k} {v}" for k, v in sorted(replaced.items())) or "none"
    kept = rows_in - sum(removed.values())
    return f"rows in: {rows_in}, rows out: {kept}; replacements: {edits}\n\n" + "\n".join(lines)


def funnel_chart(rows_in: int, removed: Counter[str]) -> str:
    """The funnel as a horizontal bar chart, a PNG embedded in markdown."""
    plt = pyplot()

    names = ["rows in", *sorted(removed, key=lambda n: -removed[n]), "rows out"]
    values = [rows_in, *(removed[n] for n in names[1:-1]), rows_in - sum(removed.values())]
    figure, axis = plt.subplots(figsize=(7, 0.35 * len(names) + 1), dpi=80)
    colors = ["#4c72b0"] + ["#dd8452"] * (len(names) - 2) + ["#55a868"]
    bars = axis.barh(names[::-1], values[::-1], color=colors[::-1])
    axis.bar_label(bars, padding=3)
    axis.set_xlabel("rows")
    axis.set_title("filter funnel (removed by first failing filter)")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    plt.close(figure)
    return f"![filter funnel](data:image/png;base64,{base64.b64encode(buffer.getvalue()).decode()})"


def merged_samples(summaries: list[FilterSummary]) -> dict[tuple[str, bool], list[Sample]]:
    """The deterministic review sample of every (filter, passed) pair across shards."""
    pools: dict[tuple[str, bool], list[Sample]] = {}
    for summary in summaries:
        for key, heap in summary.samples.items():
            pools.setdefault(key, []).extend(entry[2] for entry in heap)
    return {
        key: sorted(pool, key=lambda s: (s.key, s.doc_id))[:SAMPLES_PER_FILTER]
        for key, pool in sorted(pools.items())
    }


def samples_markdown(samples: dict[tuple[str, bool], list[Sample]]) -> str:
    """Kept and removed examples per filter, texts truncated and redacted."""
    lines = ["| filter | verdict | doc_id | score | text |", "|---|---|---|---:|---|"]
    for (name, passed), rows in samples.items():
        for s in rows:
            text = s.snippet.replace("|", "\\|").replace("\n", " ")
            lines.append(
                f"| {name} | {'pass' if passed else 'FAIL'} | {s.doc_id} | {s.score:.3g} | {text} |"
            )
    return "\n".join(lines)
