"""The published figures' arithmetic: DynamoDB's billing rules, the latency and cost models, the drift check."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from tests import perfdoc
from tests.bench import request_graph
from tests.capacity import CapacityMeter, item_size, read_units, s3_requests, value_size, write_units


def test_item_size_follows_dynamodbs_sizing_rules() -> None:
    # Names count; a string is its UTF-8 bytes; a number about a byte per two significant digits plus one.
    assert item_size({"pk": {"S": "abc"}}) == 2 + 3
    assert item_size({"n": {"N": "12345"}}) == 1 + 4
    assert value_size({"S": "é"}) == 2
    assert value_size({"BOOL": True}) == value_size({"NULL": True}) == 1
    # Lists and maps: 3 bytes, plus 1 per element (and a map's keys).
    assert value_size({"L": [{"S": "ab"}, {"S": "c"}]}) == 3 + (2 + 1) + (1 + 1)
    assert value_size({"M": {"k": {"S": "v"}}}) == 3 + 1 + 1 + 1
    assert value_size({"SS": ["ab", "cd"]}) == 4
    assert item_size(None) == 0


@pytest.mark.parametrize(
    ("size", "consistent", "transactional", "units"),
    [
        (100, False, False, 0.5),  # eventually consistent: half a unit per 4 KB
        (4096, True, False, 1.0),
        (4097, True, False, 2.0),  # rounded up per 4 KB
        (0, False, False, 0.5),  # an absent item still costs the smallest charge
        (5000, True, True, 4.0),  # transactional: double
    ],
)
def test_read_units(size: int, consistent: bool, transactional: bool, units: float) -> None:
    assert read_units(size, consistent=consistent, transactional=transactional) == units


def test_write_units_round_up_per_kilobyte_and_double_in_a_transaction() -> None:
    assert write_units(10) == 1
    assert write_units(1025) == 2
    assert write_units(1025, transactional=True) == 4


class _Table:
    """A stand-in for botocore's unmetered call: a table keyed by pk, answering the side reads."""

    def __init__(self, items: dict[str, dict[str, Any]]) -> None:
        self.items = items

    def __call__(self, op: str, params: dict[str, Any]) -> dict[str, Any]:
        if op == "GetItem":
            found = self.items.get(params["Key"]["pk"]["S"])
            return {"Item": found} if found else {}
        if op == "DescribeTable":
            return {"Table": {"KeySchema": [{"AttributeName": "pk"}]}}
        if op == "Query":
            assert "ProjectionExpression" not in params and "FilterExpression" not in params
            assert set(params.get("ExpressionAttributeValues", {})) == {":p"}  # unused placeholders dropped
            return {"Items": list(self.items.values())}
        raise AssertionError(op)


def _big(pk: str, size: int) -> dict[str, Any]:
    return {"pk": {"S": pk}, "body": {"S": "x" * (size - 2 - len(pk) - 4)}}


def test_a_transaction_costs_the_larger_side_of_each_item_twice() -> None:
    table = _Table({"a": _big("a", 3000)})
    meter = CapacityMeter()
    params = {
        "TransactItems": [
            # Replaces a 3000-byte item with a small one: billed on the larger, 3 KB, doubled.
            {"Put": {"TableName": "t", "Item": {"pk": {"S": "a"}}}},
            # A check of an absent item: the smallest charge, doubled.
            {"ConditionCheck": {"TableName": "t", "Key": {"pk": {"S": "b"}}, "ConditionExpression": "x"}},
        ]
    }
    old = meter.before(table, "TransactWriteItems", params)
    meter.after(table, "dynamodb", "TransactWriteItems", params, old)
    assert meter.usage.wru == 3 * 2 + 1 * 2
    assert meter.usage.rru == 0


def test_a_query_is_billed_on_whole_items_before_its_filter() -> None:
    table = _Table({"a": _big("a", 3000), "b": _big("b", 3000)})
    meter = CapacityMeter()
    params = {
        "TableName": "t",
        "KeyConditionExpression": "pk = :p",
        "FilterExpression": "body = :f",
        "ProjectionExpression": "pk",
        "ExpressionAttributeValues": {":p": {"S": "a"}, ":f": {"S": "y"}},
    }
    meter.after(table, "dynamodb", "Query", params, None)
    # 6000 bytes summed, then rounded up once to two 4 KB units, halved for an eventually consistent read
    assert meter.usage.rru == 1.0


def test_s3_requests_are_counted_by_price_class() -> None:
    ops = {"s3:PutObject": 1, "s3:GetObject": 2, "s3:DeleteObject": 1, "dynamodb:GetItem": 3}
    assert s3_requests(ops) == (1, 2)  # DELETE is free; DynamoDB's GetItem is no S3 GET


def _step(op: str, n: int = 1, width: int | None = None) -> dict[str, Any]:
    return {"ops": {op: n}, "width": width or n}


def _row(**over: Any) -> dict[str, Any]:
    row = {
        "label": "write (create)",
        "function": "memory_write",
        "memory_mb": 512,
        "graph": [_step("BatchGetItem"), _step("PutObject"), _step("TransactWriteItems")],
        "own_cpu_p50": 2.0,
        "own_cpu_p95": 3.0,
        "sdk_cpu_p50": 1.0,
        "sdk_cpu_p95": 1.5,
        "rru": 2.0,
        "wru": 4.0,
        "s3_put": 1,
        "s3_get": 0,
    }
    row.update(over)
    return row


def test_the_latency_model_adds_steps_and_waits_for_the_slowest_parallel_call() -> None:
    p50, p95 = perfdoc.predicted_ms(_row())
    cpu50 = 3.0 * 1769 / 512
    # three steps whose medians are 5, 30 and 10 ms: the sum's median is about their sum
    assert cpu50 + 40 < p50 < cpu50 + 60
    assert p95 > p50
    one = perfdoc.predicted_ms(_row(graph=[_step("Query")]))[0]
    eight = perfdoc.predicted_ms(_row(graph=[_step("Query", 8)]))[0]
    pooled = perfdoc.predicted_ms(_row(graph=[_step("Query", 8, 2)]))[0]
    sequential = perfdoc.predicted_ms(_row(graph=[_step("Query")] * 8))[0]
    # eight at once wait for the slowest; two lanes of four wait longer; eight in turn longest
    assert one < eight < pooled < sequential
    assert perfdoc.depth([_step("Query", 8, 2), _step("GetItem")]) == 5
    # A full core for the records search: no stretch.
    assert perfdoc.cpu_scale(1769) == 1.0
    assert perfdoc.predicted_ms(_row()) == perfdoc.predicted_ms(_row())  # seeded: the page renders the same


def test_the_cost_model_prices_units_requests_and_duration() -> None:
    row = _row()
    cost = perfdoc.cost_per_million(row)
    assert cost.apigw == 1.00 and cost.lambda_requests == 0.20
    assert cost.dynamodb == pytest.approx(2 * 0.125 + 4 * 0.625)
    assert cost.s3 == pytest.approx(5.0)  # $0.005 per 1,000 PUTs
    billed_ms = -(-perfdoc.predicted_ms(row)[0] // 1)
    assert cost.lambda_duration == pytest.approx(0.5 * billed_ms / 1000 * 0.0000133334 * 1e6)
    assert perfdoc.agentcore_counterpart("write (create)") == ("CreateEvent", 250.0)
    assert perfdoc.agentcore_counterpart("fork 64") is None


def test_the_drift_check_fails_on_an_edited_page_and_on_changed_figures() -> None:
    data = json.loads(perfdoc.DATA.read_text())
    page = perfdoc.render(data)
    assert perfdoc.problems(data, page) == []
    assert perfdoc.problems(data, page.replace("| yes |", "| YES |", 1))
    fewer = copy.deepcopy(data)
    fewer["verbs"] = fewer["verbs"][1:]
    assert any("does not list" in p for p in perfdoc.problems(fewer, perfdoc.render(fewer)))
    moved = copy.deepcopy(data)
    moved["verbs"][0]["memory_mb"] += 1
    assert any("MB now" in p for p in perfdoc.problems(moved, perfdoc.render(moved)))


def test_the_request_graph_groups_parallel_calls_and_folds_a_pools_waves() -> None:
    ms = 1_000_000
    spans = [(0, 5 * ms, "dynamodb:BatchGetItem")]
    spans += [(6 * ms, 9 * ms, "dynamodb:Query"), (6 * ms, 10 * ms, "dynamodb:Query")]  # sent together
    # six S3 reads through a pool of two: three waves, each starting as a slot frees
    spans += [(11 * ms + k // 2 * 3 * ms, 13 * ms + k // 2 * 3 * ms, "s3:GetObject") for k in range(6)]
    spans.append((40 * ms, 45 * ms, "dynamodb:TransactWriteItems"))
    graph = request_graph(spans)
    assert graph == [
        {"ops": {"BatchGetItem": 1}, "width": 1},
        {"ops": {"Query": 2}, "width": 2},
        {"ops": {"GetObject": 6}, "width": 2},
        {"ops": {"TransactWriteItems": 1}, "width": 1},
    ]
    assert perfdoc.depth(graph) == 1 + 1 + 3 + 1
    # two reads one after the other stay two steps: nothing was sent in parallel
    assert len(request_graph([(0, 1, "dynamodb:BatchGetItem"), (2, 3, "dynamodb:BatchGetItem")])) == 2


def test_the_charts_are_drawn_from_the_data_alone_and_checked_like_the_page(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the published data, its charts drawn twice are the same bytes (nothing but the data goes in),
    data = json.loads(perfdoc.DATA.read_text())
    drawn = perfdoc.charts(data)
    assert {p.name for p in drawn} == {"latency.svg", "cost.svg", "load.svg", "coldstart.svg"}
    assert perfdoc.charts(copy.deepcopy(data)) == drawn
    # the committed files are those bytes, and the page links every one of them;
    page = perfdoc.render(data)
    for path, svg in drawn.items():
        assert path.read_text() == svg
        assert f"](perf/{path.name})" in page
    # When a chart is edited, or a figure changes under it, Then the drift check names the chart.
    monkeypatch.setattr(perfdoc, "CHART_DIR", tmp_path)
    for path, svg in perfdoc.charts(data).items():
        path.write_text(svg)
    page = perfdoc.render(data)  # its links name the moved folder now
    assert perfdoc.problems(data, page) == []
    (tmp_path / "cost.svg").write_text(drawn[perfdoc.ROOT / "docs" / "perf" / "cost.svg"].replace("ours", "us"))
    assert any("cost.svg differs" in p for p in perfdoc.problems(data, page))
    slower = copy.deepcopy(data)
    slower["cold_start"]["rows"][0]["process_ms"] += 100
    (tmp_path / "cost.svg").write_text(perfdoc.charts(data)[tmp_path / "cost.svg"])
    assert [p for p in perfdoc.problems(slower, perfdoc.render(slower)) if ".svg" in p] == [
        f"docs/{tmp_path.name}/coldstart.svg differs from what docs/performance.json draws"
    ]
