"""OpenLineage: a build emits run events for every stage and its checks, to files and to an HTTP
endpoint (a local server started here), valid against the OpenLineage schema."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import jsonschema
import pytest
from referencing import Registry, Resource

from corpus_platform.base.names import STAGES
from corpus_platform.defs.stages import STAGE_CHECKS
from corpus_platform.store.openlineage import LINEAGE_DIR, URL_VARIABLE
from tests.conftest import build, make_project

SCHEMAS = Path(__file__).parents[1] / "fixtures" / "openlineage"


class Receiver(BaseHTTPRequestHandler):
    events: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).events.append({"path": self.path, "event": json.loads(body)})
        self.send_response(201)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint():
    Receiver.events = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", Receiver.events
    server.shutdown()
    server.server_close()


def validator() -> tuple[jsonschema.Draft202012Validator, dict[str, dict]]:
    schemas = {p.name: json.loads(p.read_text()) for p in SCHEMAS.glob("*.json")}
    registry = Registry().with_resources(
        (schema["$id"], Resource.from_contents(schema)) for schema in schemas.values()
    )
    main = schemas["OpenLineage.json"]
    event = {"$ref": f"{main['$id']}#/$defs/RunEvent"}
    return jsonschema.Draft202012Validator(event, registry=registry), schemas


def facets_of(event: dict) -> list[dict]:
    """Every facet of a run event (run, job, dataset, input and output facets)."""
    found = list(event["run"].get("facets", {}).values())
    found += list(event["job"].get("facets", {}).values())
    for dataset in event.get("inputs", []) + event.get("outputs", []):
        for key in ("facets", "inputFacets", "outputFacets"):
            found += list(dataset.get(key, {}).values())
    return found


def test_every_stage_and_its_checks_emit_valid_events(tmp_path, endpoint, monkeypatch) -> None:
    url, received = endpoint
    monkeypatch.setenv(URL_VARIABLE, url)
    root = make_project(tmp_path / "project")
    report = build(root)
    assert report.ok, report.render()

    events = [r["event"] for r in received]
    assert {r["path"] for r in received} == {"/api/v1/lineage"}
    files = sorted((root / LINEAGE_DIR).glob("*.json"))
    assert len(files) == len(events) == 4 * len(STAGES)  # START, checks START/end, COMPLETE
    assert sorted(json.loads(f.read_text())["run"]["runId"] for f in files) == sorted(
        e["run"]["runId"] for e in events
    )

    check_event, schemas = validator()
    by_url = {s["$id"]: s for s in schemas.values()}
    for event in events:
        check_event.validate(event)
        for facet in facets_of(event):
            schema_id, _, pointer = facet["_schemaURL"].partition("#")
            facet_schema = {"$ref": f"{schema_id}#{pointer}"}
            registry = Registry().with_resources(
                (sid, Resource.from_contents(s)) for sid, s in by_url.items()
            )
            jsonschema.Draft202012Validator(facet_schema, registry=registry).validate(facet)

    for stage in STAGES:
        mine = [e for e in events if e["job"]["name"] == stage]
        assert [e["eventType"] for e in mine] == ["START", "COMPLETE"]
        output = mine[-1]["outputs"][0]
        snapshot = report.materialized[stage]["snapshot_id"]
        assert output["name"] == f"data/{stage}"
        assert output["facets"]["version"]["datasetVersion"] == snapshot
        if stage != "fitted_statistics":  # a JSON document, no Parquet rows
            assert output["facets"]["schema"]["fields"]
        upstream = report.materialized[stage]["upstream_snapshots"]
        versions = {
            i["name"].removeprefix("data/"): i["facets"]["version"]["datasetVersion"]
            for i in mine[-1]["inputs"]
        }
        assert {k: v for k, v in versions.items() if k in STAGES} == {
            k: v for k, v in upstream.items() if k in STAGES
        }
        checks = [e for e in events if e["job"]["name"] == f"{stage}.checks"]
        assert [e["eventType"] for e in checks] == ["START", "COMPLETE"]
        judged = checks[-1]["inputs"][0]
        assert judged["facets"]["version"]["datasetVersion"] == snapshot
        assertions = judged["inputFacets"]["dataQualityAssertions"]["assertions"]
        applicable = [c for c in report.checks if c.asset == stage and c.label != "n/a"]
        assert sorted(a["assertion"] for a in assertions) == sorted(c.name for c in applicable)
        assert all(a["success"] for a in assertions)
        assert set(STAGE_CHECKS[stage].names) >= {a["assertion"] for a in assertions}

    split = next(
        e for e in events if e["job"]["name"] == "split_documents" and e["eventType"] == "COMPLETE"
    )
    lineage = split["outputs"][0]["facets"]["columnLineage"]["fields"]
    assert [f["field"] for f in lineage["component"]["inputFields"]] == ["entity", "cluster_id"]
    assert lineage["doc_id"]["inputFields"][0]["name"] == "data/deduplicated_documents"
    assert lineage["text"]["inputFields"][0]["name"] == "data/filtered_documents"  # stored once
    mix = next(
        e for e in events if e["job"]["name"] == "training_mix" and e["eventType"] == "COMPLETE"
    )
    lineage = mix["outputs"][0]["facets"]["columnLineage"]["fields"]
    assert "text" not in lineage  # stored once: the mix's rows take it from split_documents
    assert lineage["doc_id"]["inputFields"][0]["name"] == "data/normalized_splits"
    shards = next(
        e for e in events if e["job"]["name"] == "training_shards" and e["eventType"] == "COMPLETE"
    )
    lineage = shards["outputs"][0]["facets"]["columnLineage"]["fields"]
    assert lineage["text"]["inputFields"][0]["name"] == "data/split_documents"
    assert lineage["doc_id"]["inputFields"][0]["name"] == "data/training_mix"


def test_a_rejected_stage_emits_fail_with_its_failed_assertions(tmp_path) -> None:
    root = make_project(tmp_path / "project", split={"mode": "row"})  # leaks: its checks fail
    report = build(
        root, ["raw_documents", "filtered_documents", "deduplicated_documents", "split_documents"]
    )
    assert not report.ok
    events = [json.loads(f.read_text()) for f in sorted((root / LINEAGE_DIR).glob("*.json"))]
    split = [e for e in events if e["job"]["name"] == "split_documents"]
    assert [e["eventType"] for e in split] == ["START", "FAIL"]
    assert "rejected" in split[-1]["run"]["facets"]["errorMessage"]["message"]
    checks = [e for e in events if e["job"]["name"] == "split_documents.checks"]
    assert checks[-1]["eventType"] == "FAIL"
    failed = {
        a["assertion"]
        for a in checks[-1]["inputs"][0]["inputFacets"]["dataQualityAssertions"]["assertions"]
        if not a["success"]
    }
    assert "no_entity_in_two_splits" in failed
