"""The HTML report's structure, read with the standard library's HTML parser: what each
page holds is asserted from the JSON document of the same run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.audit.reports import (
    PAYLOAD,
    WEB_POD,
    big_cluster,
    cli,
    demo_audit,
    drill_document,
    full_cluster,
    outage_document,
    payload_cluster,
    preempting_document,
    write_snapshot,
)
from tests.builders import ZONE
from tests.htmltree import Element, parse
from tests.paths import DEMO_SNAPSHOT
from webhook.render.html import NAMES_SHOWN, ROWS, ROWS_SHOWN, audit_page, simulate_page


def cards(root: Element) -> dict[str, Element]:
    return {str(c.attrs["data-workload"]): c for c in root.find_all("article", cls="card")}


def domain_counts(constraint: Element) -> dict[str, str]:
    """domain -> the count text its row shows."""
    out = {}
    for row in constraint.find_all("li", cls="domain"):
        [name] = [s for s in row.find_all("span") if "name" in s.classes()]
        [count] = [s for s in row.find_all("span") if "count" in s.classes()]
        out[name.text()] = count.text()
    return out


def over_limit(c: dict[str, Any]) -> set[str]:
    """Domains holding more than the global minimum plus maxSkew (violations only)."""
    if not c["violated"]:
        return set()
    low = min(c["domains"].values())
    return {d for d, n in c["domains"].items() if n > low + c["maxSkew"]}


# ---- a self-contained page ----------------------------------------------------------------


@pytest.mark.parametrize(
    "page",
    [
        pytest.param(lambda: demo_audit("--plan")[1], id="audit --plan"),
        pytest.param(lambda: audit_page(drill_document()), id="drill"),
        pytest.param(lambda: simulate_page(preempting_document()), id="simulate"),
    ],
)
def test_page_is_one_file_with_no_script_and_no_external_asset(page: Any) -> None:
    html = page()
    root = parse(html)
    assert html.startswith("<!DOCTYPE html>")
    tags = {e.tag for e in root.iter()}
    assert {"script", "link", "img", "iframe", "object"}.isdisjoint(tags)
    assert "svg" in tags or "table" in tags
    for e in root.iter():
        assert not {"src", "href", "srcset", "action"} & set(e.attrs), e
        assert not any(a.startswith("on") for a in e.attrs), e
    [csp] = [m for m in root.find_all("meta") if m.attrs.get("http-equiv")]
    assert "default-src 'none'" in str(csp.attrs["content"])
    [style] = root.find_all("style")
    assert "prefers-color-scheme:dark" in style.text() and "@media print" in style.text()
    assert "url(" not in style.text() and "@import" not in style.text()


# ---- audit ------------------------------------------------------------------------------


def test_demo_audit_has_a_card_per_workload_and_a_bar_per_domain() -> None:
    doc, html = demo_audit("--plan")
    root = parse(html)
    shown = cards(root)
    assert set(shown) == {f"{w['namespace']}/{w['name']}" for w in doc["workloads"]}
    for w in doc["workloads"]:
        card = shown[f"{w['namespace']}/{w['name']}"]
        constraints = card.find_all("div", cls="constraint")
        assert len(constraints) == len(w["constraints"])
        assert ("violated" in card.classes()) == any(c["violated"] for c in w["constraints"])
        for c, drawn in zip(w["constraints"], constraints, strict=True):
            assert domain_counts(drawn) == {d: str(n) for d, n in c["domains"].items()}
            assert len(drawn.find_all("svg", cls="bar")) == len(c["domains"])
            over = {r.find_all("code")[0].text() for r in drawn.find_all("li", cls="over")}
            assert over == over_limit(c)
            assert f"maxSkew {c['maxSkew']}" in drawn.text()
            assert f"skew {c['skew']}" in drawn.text()


def test_audit_summary_counts_come_from_the_document() -> None:
    doc, html = demo_audit("--plan")
    stats = [li.text() for li in parse(html).find_all("ul", cls="stats")[0].find_all("li")]
    checked = sum(len(w["constraints"]) for w in doc["workloads"])
    assert stats == [
        plural(len(doc["workloads"]), "workload"),
        plural(checked, "constraint") + " checked",
        f"{doc['violations']} violated",
        plural(len(doc["plan"]), "eviction") + " planned",
    ]


def plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def test_plan_lists_every_eviction_in_order() -> None:
    doc, html = demo_audit("--plan")
    evictions = [e.text() for e in parse(html).find_all("li", cls="eviction")]
    assert doc["plan"], "the demo snapshot needs a move"
    assert evictions == [f"evict {m['pod']} {m['from']} → {m['to']}" for m in doc["plan"]]


def test_an_incomplete_plan_says_so_and_why() -> None:
    doc = {
        "workloads": [],
        "violations": 0,
        "plan": [],
        "planComplete": False,
        "planReasons": {"Deployment shop/web": "no node has room"},
    }
    text = parse(audit_page(doc)).text()
    assert "(incomplete)" in text and "Deployment shop/web: no node has room" in text


def test_a_real_drill_lists_its_removed_nodes() -> None:
    doc, html = demo_audit("--without-nodes", "topology.kubernetes.io/zone=eu-west-1b")
    root = parse(html)
    [removed] = [p for p in root.find_all("p", cls="drill-nodes")]
    assert removed.text() == f"{len(doc['removedNodes'])} removed nodes"
    assert {c.text() for c in root.find_all("code")} >= set(doc["removedNodes"])
    assert f"{len(doc['pending'])} pending" in root.find_all("ul", cls="stats")[0].text()


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param(drill_document(), id="before per constraint"),
        pytest.param(outage_document(), id="before per workload entry"),
    ],
)
def test_drill_draws_each_domain_before_and_after(doc: dict[str, Any]) -> None:
    root = parse(audit_page(doc))
    [w] = doc["workloads"]
    [c] = w["constraints"]
    before = c.get("before") or w["before"][0]
    [drawn] = root.find_all("div", cls="constraint")
    assert domain_counts(drawn) == {d: f"{before[d]} → {n}" for d, n in c["domains"].items()}
    for bar in drawn.find_all("svg", cls="bar"):
        assert {r.attrs["class"] for r in bar.find_all("rect")} == {"was", "now"}


def test_drill_groups_pending_pods_by_reason_with_the_scale_up_diagnosis() -> None:
    doc = drill_document()
    root = parse(audit_page(doc))
    groups = {s.find_all("h3")[0].text(): s for s in root.find_all("section", cls="reason")}
    expected: dict[str, list[str]] = {}
    for pod in doc["pending"]:
        key = "; ".join(f"{n} {r}" for r, n in sorted(doc["pendingReasons"][pod].items()))
        expected.setdefault(key, []).append(pod)
    assert set(groups) == set(expected)
    for key, pods in expected.items():
        section = groups[key]
        assert section.attrs["data-pods"] == str(len(pods))
        assert [li.find_all("code")[0].text() for li in section.find_all("li")] == pods
        helped = sum(1 for p in pods if doc["scaleUp"][p])
        assert f"{helped} of {len(pods)} would fit on a new node" in section.text()
    db = groups["4 Insufficient memory"].text()
    assert "fits on a new node of group m6i.xlarge in zone eu-west-1c" in db
    spread = groups["4 node(s) didn't match pod topology spread constraints"].text()
    assert "no new node would help" in spread


def test_drill_shows_nodes_blocked_evictions_and_pods_that_stay_down() -> None:
    doc = drill_document()
    root = parse(audit_page(doc))
    text = root.text()
    [drained] = root.find_all("p", cls="drill-nodes")
    assert drained.attrs["data-key"] == "drainedNodes"
    assert drained.text() == f"{len(doc['drainedNodes'])} drained node"
    assert f"{len(doc['notRecreated'])} pods down and not coming back" in text
    codes = [c.text() for c in root.find_all("code")]
    assert set(doc["notRecreated"]) <= set(codes)
    for pod, budget in doc["blocked"].items():
        rows = [tr.text() for tr in root.find_all("tr")]
        assert f"{pod}{budget}" in rows
    outage = parse(audit_page(outage_document())).find_all("p", cls="drill-nodes")
    assert [p.attrs["data-key"] for p in outage] == ["unreachableNodes"]


def test_domains_past_the_threshold_are_summarised_with_a_histogram() -> None:
    domains = {f"node-{i:05d}": i % 3 for i in range(5000)}
    doc = {
        "workloads": [
            {
                "kind": "Deployment",
                "namespace": "shop",
                "name": "web",
                "pods": 5000,
                "constraints": [
                    {
                        "index": 0,
                        "topologyKey": "kubernetes.io/hostname",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "maxSkew": 1,
                        "minDomains": None,
                        "skew": 2,
                        "violated": True,
                        "domains": domains,
                    }
                ],
            }
        ],
        "violations": 1,
    }
    root = parse(audit_page(doc))
    [drawn] = root.find_all("div", cls="constraint")
    rows = domain_counts(drawn)
    assert len(rows) == 2 * ROWS_SHOWN
    assert sorted(rows.values()).count("2") == ROWS_SHOWN  # the fullest
    assert sorted(rows.values()).count("0") == ROWS_SHOWN  # the emptiest
    histogram = {
        tr.find_all("td")[0].text(): tr.find_all("td")[1].text()
        for tr in drawn.find_all("tr")
        if tr.find_all("td")
    }
    assert histogram == {"0": "1,667", "1": "1,667", "2": "1,666"}


def test_cards_of_workloads_within_max_skew_collapse_past_the_threshold() -> None:
    small, _ = demo_audit()
    within = [w for w in small["workloads"] if not any(c["violated"] for c in w["constraints"])]
    many = {"workloads": within * (ROWS + 1), "violations": 0}
    root = parse(audit_page(many))
    [details] = root.find_all("details")
    assert len(details.find_all("article", cls="card")) == len(many["workloads"])
    assert len(parse(audit_page(small)).find_all("details")) == 0


# ---- simulate -------------------------------------------------------------------------


def test_simulate_table_has_a_row_per_node_with_score_or_reasons(tmp_path: Path) -> None:
    cluster = write_snapshot(tmp_path / "c.json", big_cluster(12))
    args = ("simulate", "--snapshot", str(cluster), str(WEB_POD), "--replicas", "4")
    doc = json.loads(cli(*args, "-o", "json")[1])
    root = parse(cli(*args, "-o", "html")[1])
    rows = {str(tr.attrs["data-node"]): tr for tr in root.find_all("tr") if "data-node" in tr.attrs}
    assert list(rows) == [n["name"] for n in doc["nodes"]]
    for n in doc["nodes"]:
        cells = [td.text() for td in rows[n["name"]].find_all("td")]
        if n["feasible"]:
            assert cells[1:3] == ["yes", str(n["score"])]
        else:
            failing = [
                f"{p}: {s['reason']}" for p, s in n["filters"].items() if s["code"] != "Success"
            ]
            assert cells[1] == "no" and cells[3] == "; ".join(failing)
    [selected] = [tr for tr in rows.values() if "selected" in tr.classes()]
    assert selected.attrs["data-node"] == doc["selectedNode"]
    placements = root.find_all("ol", cls="plan")[0].find_all("li")
    assert [li.text() for li in placements] == doc["placements"]
    for key, domains in doc["distribution"].items():
        [drawn] = [d for d in root.find_all("div", cls="constraint") if d.attrs["data-key"] == key]
        assert domain_counts(drawn) == {d: str(n) for d, n in domains.items()}


def test_simulate_of_5000_nodes_lists_the_best_and_groups_the_rest_by_reason(
    tmp_path: Path,
) -> None:
    cluster = write_snapshot(tmp_path / "c.json", big_cluster(5000))
    args = ("simulate", "--snapshot", str(cluster), str(WEB_POD))
    doc = json.loads(cli(*args, "-o", "json")[1])
    html = cli(*args, "-o", "html")[1]
    root = parse(html)
    rows = [tr for tr in root.find_all("tr") if "data-node" in tr.attrs]
    feasible = sorted(
        (n for n in doc["nodes"] if n["feasible"]), key=lambda n: (-n["score"], n["name"])
    )
    assert [tr.attrs["data-node"] for tr in rows] == [n["name"] for n in feasible[:ROWS_SHOWN]]
    failing: dict[str, int] = {}
    for n in doc["nodes"]:
        for p, s in n["filters"].items():
            if s["code"] != "Success":
                key = f"{p}: {s['reason']}"
                failing[key] = failing.get(key, 0) + 1
    sections = {s.find_all("h3")[0].text(): s for s in root.find_all("section", cls="reason")}
    assert {k: int(str(s.attrs["data-nodes"])) for k, s in sections.items()} == failing
    for s in sections.values():
        assert len(s.find_all("li")) <= NAMES_SHOWN + 1
    assert len(html) < 200_000


def test_simulate_shows_preemption_victims_and_scale_up() -> None:
    doc = preempting_document()
    root = parse(simulate_page(doc))
    [section] = root.find_all("section", cls="preemption")
    assert section.find_all("h3")[0].text() == "Preempts 2 pods on node-a"
    assert [li.text() for li in section.find_all("li")] == doc["preemption"]["victims"]
    [scale] = root.find_all("ul", cls="scale-up")
    assert (
        scale.text() == "default/urgent fits on a new node of group m6i.xlarge in zone eu-west-1a"
    )


def test_several_workloads_get_one_section_each() -> None:
    one = preempting_document()
    docs = [{"workload": f"Deployment default/w{i}", "replicas": 2, **one} for i in range(3)]
    sections = parse(simulate_page(docs)).find_all("section", cls="simulation")
    assert [s.find_all("h2")[0].text() for s in sections] == [
        f"Deployment default/w{i} (2 replicas)" for i in range(3)
    ]


# ---- escaping ---------------------------------------------------------------------------


def test_a_label_value_from_the_cluster_renders_as_text(tmp_path: Path) -> None:
    cluster = str(write_snapshot(tmp_path / "c.json", payload_cluster()))
    doc = json.loads(cli("audit", "--snapshot", cluster, "-o", "json")[1])
    api, web = doc["workloads"]
    assert PAYLOAD in api["constraints"][0]["domains"]
    assert PAYLOAD in web["constraints"][0]["error"]
    root = parse(cli("audit", "--snapshot", cluster, "-o", "html")[1])
    assert root.find_all("img") == []
    assert PAYLOAD in [c.text() for c in root.find_all("code")]
    assert web["constraints"][0]["error"] in [p.text() for p in root.find_all("p", cls="bad")]


@pytest.mark.parametrize(
    "render",
    [
        pytest.param(lambda d: audit_page(d, generated=PAYLOAD), id="audit"),
        pytest.param(simulate_page, id="simulate"),
    ],
)
def test_every_string_of_the_document_is_escaped(render: Any) -> None:
    """The payload in every string and every mapping key of the documents (but the
    interface's own keys) shows as text and adds no element."""

    def poison(value: Any, keep_keys: bool) -> Any:
        if isinstance(value, str):
            return PAYLOAD + value
        if isinstance(value, list):
            return [poison(v, keep_keys) for v in value]
        if isinstance(value, dict):
            return {
                (k if keep_keys else PAYLOAD + k): poison(v, k not in FREE_KEYS)
                for k, v in value.items()
            }
        return value

    docs = [drill_document(), preempting_document()]
    for doc in docs:
        page = render(poison(doc, True))
        root = parse(page)
        assert {"img", "script"}.isdisjoint({e.tag for e in root.iter()})
        assert PAYLOAD in root.text()


# Keys of the documents whose values are mappings keyed by data from the cluster.
FREE_KEYS = {
    "domains",
    "before",
    "pendingReasons",
    "scaleUp",
    "blocked",
    "planReasons",
    "distribution",
    "scores",
    "filters",
    "matchLabels",
}


def test_a_drill_lists_changed_workloads_before_unchanged_ones() -> None:
    """Violated first, then those the drill changed within maxSkew, then the rest."""
    doc = drill_document()
    [violated] = doc["workloads"]
    changed = json.loads(json.dumps(violated))
    changed.update(name="api")
    c = changed["constraints"][0]
    c.update(violated=False, skew=1, domains={"eu-west-1a": 1, "eu-west-1b": 2, "eu-west-1c": 2})
    unchanged = json.loads(json.dumps(changed))
    unchanged.update(name="db")
    unchanged["constraints"][0]["before"] = unchanged["constraints"][0]["domains"]
    doc["workloads"] = [unchanged, changed, violated]
    root = parse(audit_page(doc))
    headings = [h.text() for h in root.find_all("h2") if "workload" in h.text()]
    assert headings == [
        "1 workload violating a constraint",
        "1 workload changed by the drill, within maxSkew",
        "1 workload within maxSkew, unchanged",
    ]
    assert list(cards(root)) == ["shop/web", "shop/api", "shop/db"]


def test_html_exits_as_json_does() -> None:
    """-o html changes the output, not the exit status (1: something is violated)."""
    snapshot = ("audit", "--snapshot", str(DEMO_SNAPSHOT))
    json_code, doc = cli(*snapshot, "-o", "json")
    html_code, _ = cli(*snapshot, "-o", "html")
    assert html_code == json_code == (1 if json.loads(doc)["violations"] else 0)


def test_a_real_drill_groups_its_pending_pods_by_reason(tmp_path: Path) -> None:
    """Zone a lost with no room elsewhere: the pods `pending` lists, under the reasons
    `pendingReasons` gives them."""
    cluster = str(write_snapshot(tmp_path / "c.json", full_cluster()))
    args = ("audit", "--snapshot", cluster, "--without-nodes", f"{ZONE}=zone-a")
    doc = json.loads(cli(*args, "-o", "json")[1])
    assert doc["pending"], "the drill must leave a pod pending"
    root = parse(cli(*args, "-o", "html")[1])
    shown = {
        s.find_all("h3")[0].text(): [li.find_all("code")[0].text() for li in s.find_all("li")]
        for s in root.find_all("section", cls="reason")
    }
    expected: dict[str, list[str]] = {}
    for pod in doc["pending"]:
        reasons = sorted(doc["pendingReasons"][pod].items())
        expected.setdefault("; ".join(f"{n} {r}" for r, n in reasons), []).append(pod)
    assert shown == expected
