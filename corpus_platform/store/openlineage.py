"""OpenLineage run events of every stage and of its checks, with the ecosystem's own client.

Each stage materialization is an OpenLineage job named after its asset (namespace
``corpus_platform``): ``START`` when its candidate is written and audited, then ``COMPLETE`` with
the published dataset, or ``FAIL`` when a check rejected it. The dataset's version is its
snapshot id; its facets carry the schema of its Parquet rows and the column lineage from the
stage's inputs. The stage's checks are a job of their own (``<asset>.checks``) whose input is
the judged dataset, with every verdict as a data-quality assertion. Marquez, DataHub and
OpenMetadata ingest these events.

Events always go to files under ``.corpus/lineage/`` (one JSON file an event, named by time, job
and event type) and, when the
environment names an endpoint (``OPENLINEAGE_URL``, the client's own convention), to it as well.
A lineage endpoint that does not answer never fails a build: the files are written first, and
the error is returned to the caller to log.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from openlineage.client import OpenLineageClient
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import (
    column_lineage_dataset,
    data_quality_assertions_dataset,
    dataset_version_dataset,
    error_message_run,
    schema_dataset,
)
from openlineage.client.transport.file import FileConfig, FileTransport
from openlineage.client.transport.http import HttpConfig, HttpTransport

from corpus_platform.base.shards import read_schema
from corpus_platform.store.datasets import STAGE_ROOT

NAMESPACE = "corpus_platform"
PRODUCER = "urn:corpus_platform"
LINEAGE_DIR = Path(".corpus") / "lineage"
URL_VARIABLE = "OPENLINEAGE_URL"
# Columns a stage computes from others (the rest pass through under their own names).
DERIVED: dict[str, dict[str, tuple[str, ...]]] = {
    "raw_documents": {"content_hash": ("text",)},
    "filtered_documents": {"quality_score": ("text",)},
    "deduplicated_documents": {"cluster_id": ("text", "doc_id")},
    "split_documents": {"component": ("entity", "cluster_id"), "bucket": ("entity", "cluster_id")},
    "training_mix": {"times_drawn": ("source", "doc_id")},
}
# the stage a stage's columns come from when it has several upstream stages
PRIMARY_UPSTREAM = {
    "split_documents": "deduplicated_documents",
    "normalized_splits": "split_documents",
    "training_mix": "normalized_splits",
    "training_shards": "training_mix",
}


@dataclass(frozen=True)
class Verdict:
    """One check's verdict, as an assertion: its name, whether it passed, what it measured."""

    check: str
    passed: bool
    verdict: str


def run_uuid(dagster_run_id: str, job: str) -> str:
    """A stable OpenLineage run id (a UUID) for one job of one Dagster run."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"corpus_platform/{dagster_run_id}/{job}"))


def parquet_schema(folder: Path) -> dict[str, str]:
    """Column -> Arrow type of the stage's rows (the first Parquet file found under the folder,
    side tables excluded when the rows sit in split folders)."""
    files = sorted(folder.glob("part-*.parquet")) or sorted(folder.glob("*/part-*.parquet"))
    files = files or sorted(folder.glob("*.parquet"))
    if not files:
        return {}
    schema = read_schema(files[0])  # a file, or a shard folder of batch files
    return {field.name: str(field.type) for field in schema}


class LineageEmitter:
    """Builds and sends the events of one project's stages."""

    def __init__(self, root: Path) -> None:
        self.root = root
        folder = root / LINEAGE_DIR
        folder.mkdir(parents=True, exist_ok=True)
        self.clients = [
            OpenLineageClient(
                transport=FileTransport(  # .corpus/lineage/ol-<time>-<job>-<event type>.json
                    FileConfig(log_file_path=str(folder / "ol"), debug_mode=True)
                )
            )
        ]
        url = os.environ.get(URL_VARIABLE)
        if url:
            self.clients.append(OpenLineageClient(transport=HttpTransport(HttpConfig(url=url))))

    def _dataset(self, asset: str) -> tuple[str, str]:
        return f"file://{self.root}", f"{STAGE_ROOT}/{asset}"

    def _emit(self, event: RunEvent) -> list[str]:
        errors = []
        for client in self.clients:
            try:
                client.emit(event)
            except Exception as error:  # a lineage endpoint never fails a build; reported
                errors.append(f"{type(error).__name__}: {error}")
        return errors

    def _inputs(self, upstream: Mapping[str, str]) -> list[InputDataset]:
        out = []
        for name, snapshot in sorted(upstream.items()):
            namespace, path = self._dataset(name)
            version = dataset_version_dataset.DatasetVersionDatasetFacet(datasetVersion=snapshot)
            out.append(InputDataset(namespace, path, facets={"version": version}))
        return out

    def _event(
        self,
        state: RunState,
        run_id: str,
        job: str,
        inputs: list[InputDataset],
        outputs: list[OutputDataset],
        error: str | None = None,
    ) -> RunEvent:
        facets = {}
        if error is not None:
            facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
                message=error, programmingLanguage="python"
            )
        return RunEvent(
            eventType=state,
            eventTime=datetime.now(UTC).isoformat(),
            run=Run(runId=run_id, facets=facets),
            job=Job(namespace=NAMESPACE, name=job),
            inputs=inputs,
            outputs=outputs,
            producer=PRODUCER,
        )

    def stage_started(
        self, dagster_run_id: str, asset: str, upstream: Mapping[str, str]
    ) -> list[str]:
        """``START`` of a stage: its inputs at their snapshot versions."""
        namespace, path = self._dataset(asset)
        event = self._event(
            RunState.START,
            run_uuid(dagster_run_id, asset),
            asset,
            self._inputs(upstream),
            [OutputDataset(namespace, path)],
        )
        return self._emit(event)

    def stage_published(
        self, dagster_run_id: str, asset: str, upstream: Mapping[str, str], snapshot: str
    ) -> list[str]:
        """``COMPLETE`` of a stage: the published dataset, its version, schema and column
        lineage from its upstream stages."""
        namespace, path = self._dataset(asset)
        columns = parquet_schema(self.root / STAGE_ROOT / asset)
        facets: dict[str, Any] = {
            "version": dataset_version_dataset.DatasetVersionDatasetFacet(datasetVersion=snapshot)
        }
        if columns:  # a stage of Parquet rows (fitted_statistics is one JSON document)
            facets["schema"] = schema_dataset.SchemaDatasetFacet(
                fields=[
                    schema_dataset.SchemaDatasetFacetFields(name=name, type=kind)
                    for name, kind in columns.items()
                ]
            )
        lineage = self._column_lineage(asset, columns, upstream)
        if lineage is not None:
            facets["columnLineage"] = lineage
        event = self._event(
            RunState.COMPLETE,
            run_uuid(dagster_run_id, asset),
            asset,
            self._inputs(upstream),
            [OutputDataset(namespace, path, facets=facets)],
        )
        return self._emit(event)

    def stage_rejected(
        self, dagster_run_id: str, asset: str, upstream: Mapping[str, str], why: str
    ) -> list[str]:
        """``FAIL`` of a stage whose candidate a check rejected (nothing was published)."""
        namespace, path = self._dataset(asset)
        event = self._event(
            RunState.FAIL,
            run_uuid(dagster_run_id, asset),
            asset,
            self._inputs(upstream),
            [OutputDataset(namespace, path)],
            error=why,
        )
        return self._emit(event)

    def checks_judged(
        self, dagster_run_id: str, asset: str, snapshot: str, verdicts: Sequence[Verdict]
    ) -> list[str]:
        """The stage's checks as a job of their own (``START``, then ``COMPLETE`` when every
        verdict passed, else ``FAIL``), each verdict a data-quality assertion on the judged
        dataset at version ``snapshot``."""
        job, run_id = f"{asset}.checks", run_uuid(dagster_run_id, f"{asset}.checks")
        namespace, path = self._dataset(asset)
        assertions = data_quality_assertions_dataset.DataQualityAssertionsDatasetFacet(
            assertions=[
                data_quality_assertions_dataset.Assertion(
                    assertion=v.check, success=v.passed, severity="error", description=v.verdict
                )
                for v in verdicts
            ]
        )
        version = dataset_version_dataset.DatasetVersionDatasetFacet(datasetVersion=snapshot)
        judged = InputDataset(
            namespace,
            path,
            facets={"version": version},
            inputFacets={"dataQualityAssertions": assertions},
        )
        errors = self._emit(self._event(RunState.START, run_id, job, [judged], []))
        failed = [v.check for v in verdicts if not v.passed]
        state = RunState.FAIL if failed else RunState.COMPLETE
        why = f"failed checks: {', '.join(failed)}" if failed else None
        return errors + self._emit(self._event(state, run_id, job, [judged], [], error=why))

    def _column_lineage(
        self, asset: str, columns: Mapping[str, str], upstream: Mapping[str, str]
    ) -> column_lineage_dataset.ColumnLineageDatasetFacet | None:
        stages = [name for name in sorted(upstream) if (self.root / STAGE_ROOT / name).is_dir()]
        if not stages:
            return None
        primary = PRIMARY_UPSTREAM.get(asset, stages[-1])
        order = [primary, *(n for n in reversed(stages) if n != primary)]
        schemas = {name: parquet_schema(self.root / STAGE_ROOT / name) for name in order}
        derived = DERIVED.get(asset, {})
        fields = {}
        for column in columns:
            # a column comes from the primary upstream stage, else the first that has it (the
            # shards' text: split_documents, as training_mix stores none; the split's:
            # filtered_documents, as deduplicated_documents stores none)
            source = next((n for n in order if column in schemas[n]), primary)
            inputs = derived.get(column) or ((column,) if column in schemas[source] else ())
            if not inputs:
                continue
            namespace, path = self._dataset(primary if column in derived else source)
            fields[column] = column_lineage_dataset.Fields(
                inputFields=[
                    column_lineage_dataset.InputField(
                        namespace=namespace,
                        name=path,
                        field=name,
                        transformations=[
                            column_lineage_dataset.Transformation(
                                type="DIRECT",
                                subtype="TRANSFORMATION" if column in derived else "IDENTITY",
                            )
                        ],
                    )
                    for name in inputs
                ]
            )
        return column_lineage_dataset.ColumnLineageDatasetFacet(fields=fields)
