"""What a reviewer sees of the training mix in the UI: the achieved mix and each source's epochs."""

import base64
import io
from collections.abc import Mapping

import dagster as dg

from corpus_platform.base.charts import pyplot
from corpus_platform.kernels.mixing.plan import MixPlan


def mix_metadata(plan: MixPlan, drawn: Mapping[str, int]) -> dict[str, dg.MetadataValue]:
    """The pie chart of the achieved mix and the table of epochs, in the plan's unit
    (``drawn``: units drawn per source)."""
    return {
        "mix_unit": dg.MetadataValue.text(plan.unit),
        "mix_chart": dg.MetadataValue.md(mix_chart(drawn, plan.unit)),
        "mix_epochs": dg.MetadataValue.md(epochs_markdown(plan, drawn)),
        "target_shares": dg.MetadataValue.json({s: round(p, 6) for s, p in plan.shares.items()}),
    }


def epochs_markdown(plan: MixPlan, drawn: Mapping[str, int]) -> str:
    """Per source: available and drawn units, target and achieved share, planned rate and
    achieved epochs (drawn / available), and whether ``max_epochs`` held it."""
    unit = plan.unit
    total = sum(drawn.values()) or 1
    lines = [
        f"| source | available {unit} | drawn {unit} | target share | achieved share | "
        "rate | epochs | capped |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for source in sorted({*plan.available, *plan.shares, *drawn}):
        available, got = plan.available.get(source, 0), drawn.get(source, 0)
        epochs = f"{got / available:.3f}" if available else "-"
        lines.append(
            f"| {source} | {available:,} | {got:,} | {plan.shares.get(source, 0.0):.4f} | "
            f"{got / total:.4f} | {plan.rates.get(source, 0.0):.4f} | {epochs} | "
            f"{'yes' if source in plan.capped else ''} |"
        )
    return f"mix of {sum(drawn.values()):,} {unit} (target {plan.total:,.0f})\n\n" + "\n".join(
        lines
    )


def mix_chart(drawn: Mapping[str, int], unit: str) -> str:
    """The achieved mix per source as a pie chart, a PNG embedded in markdown."""
    plt = pyplot()

    sources = sorted(s for s, n in drawn.items() if n > 0)
    figure, axis = plt.subplots(figsize=(5, 5), dpi=80)
    if sources:
        axis.pie(
            [drawn[s] for s in sources],
            labels=[f"{s}\n{drawn[s]:,}" for s in sources],
            autopct="%1.1f%%",
            startangle=90,
            counterclock=False,
        )
    axis.set_title(f"training mix by source ({unit})")
    axis.axis("equal")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    plt.close(figure)
    encoded = base64.b64encode(buffer.getvalue()).decode()
    return f"![training mix by source ({unit})](data:image/png;base64,{encoded})"
