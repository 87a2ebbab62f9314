"""The human-readable summary printed at the end of `make bench`."""

from __future__ import annotations

from typing import Any


def _mark(targets: dict[str, Any], key: str) -> str:
    entry = targets.get(key) or {}
    return "OK  " if entry.get("met") else "MISS"


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def summary(results: dict[str, Any]) -> str:
    targets = results.get("targets", {})
    lines = [
        "",
        "=" * 100,
        "bench summary" + (" (SMOKE: tiny sizes, not a result)" if results["meta"]["smoke"] else ""),
    ]
    lines.append("=" * 100)

    rt = results.get("round_trips") or {}
    lines.append(f"[{_mark(targets, 'round_trips')}] round_trips (DynamoDB calls per request; + idempotency record)")
    for route, step in (rt.get("by_route") or {}).items():
        if "skipped" in step:
            lines.append(f"        {route:<58} skipped: {step['skipped']}")
            continue
        extra = f" + {step['idempotency_calls']} idem" if step.get("idempotency_calls") else ""
        lines.append(
            f"        {route:<58} {step['round_trips']}{extra:<9} {step.get('status')}  "
            f"WRU {step['modelled_wru']:<5} RCU {step['rcu']:<4} {','.join(step['operations'])}"
        )
    for label, step in (rt.get("stream") or {}).items():
        lines.append(
            f"        stream: {label:<50} {step['round_trips']}          WRU {step['modelled_wru']:<5} RCU {step['rcu']:<4} "
            f"{','.join(step['operations'])}"
        )
    for miss in rt.get("misses", []) or []:
        lines.append(f"        miss: {miss}")
    if "error" in rt:
        lines.append(f"        error: {rt['error']}")

    scans = results.get("scans") or {}
    lines.append(f"[{_mark(targets, 'scans')}] scans: {scans.get('total', scans.get('error'))}")

    ra = results.get("read_amplification") or {}
    lines.append(f"[{_mark(targets, 'read_amplification')}] read_amplification (items read / items returned)")
    for route, figure in (ra.get("routes") or {}).items():
        if "ratio" in figure:
            lines.append(
                f"        {route:<58} {_fmt(figure['ratio'])} ({figure['items_read']}/{figure['items_returned']})"
            )
        else:
            lines.append(f"        {route:<58} {figure}")

    cap = results.get("capacity") or {}
    life = cap.get("order_life") or {}
    lines.append(
        f"[{_mark(targets, 'capacity')}] capacity: life of a 3-line order = "
        f"{life.get('total_wcu')} WCU + {life.get('total_rcu')} RCU"
    )
    checked = life.get("condition_checks") or {}
    if checked:
        lines.append(f"        of which {checked.get('count')} ConditionChecks, {checked.get('wru')} WRU")
    for part, figure in (life.get("parts") or {}).items():
        if figure:
            checks = figure.get("condition_checks") or {}
            lines.append(
                f"        {part:<40} WRU {figure['wcu']:<6} (DynamoDB Local says {figure['wcu_reported_by_dynamodb_local']}) "
                f"RCU {figure['rcu']:<4} ConditionChecks {checks.get('count', 0)} ({checks.get('wru', 0)} WRU)"
            )
        else:
            lines.append(f"        {part:<40} not measured")
    cost = results.get("cost_per_million_orders_usd") or {}
    lines.append(
        f"[{_mark(targets, 'cost_per_million_orders_usd')}] cost_per_million_orders_usd: {cost.get('value')} "
        f"(placing+confirming+reading: {cost.get('placing_confirming_reading')})"
    )
    bill = results.get("whole_bill_per_million_orders_usd") or {}
    if bill:
        lines.append(
            f"[info] whole_bill_per_million_orders_usd: {bill.get('value')} (DynamoDB provisioned at 70 %: "
            f"{bill.get('whole_bill_with_dynamodb_provisioned_usd')})"
        )
        for part, usd in (bill.get("parts_usd") or {}).items():
            lines.append(f"        {part:<40} {usd}")

    sc = results.get("scale") or {}
    lines.append(f"[{_mark(targets, 'scale')}] scale: p50 ms at {sc.get('sizes')} items, ratio large/small")
    for route, figure in (sc.get("routes") or {}).items():
        lines.append(
            f"        {route:<58} {figure.get('p50_ms_small')} -> {figure.get('p50_ms_large')}  "
            f"ratio {_fmt(figure.get('ratio'))} (interleaved; sequential {_fmt(figure.get('sequential_ratio'))})"
        )
    if sc.get("load_seconds"):
        lines.append(f"        bulk load: {sc.get('load_seconds')} s ({sc.get('load_items_per_s')} items/s)")
    if "error" in sc:
        lines.append(f"        error: {sc['error']}")

    cat = results.get("catalogue_scale") or {}
    lines.append(
        f"[{_mark(targets, 'catalogue_scale')}] catalogue_scale: listings at {cat.get('products')} products "
        "(calls, read amplification)"
    )
    for listing, pages in (cat.get("listings") or {}).items():
        for page, figure in pages.items():
            if isinstance(figure, dict):
                lines.append(
                    f"        {listing + ', ' + page:<58} {figure.get('calls')} {_fmt(figure.get('read_amplification'))}"
                )
    if "error" in cat:
        lines.append(f"        error: {cat['error']}")

    ov = results.get("overhead_ratio") or {}
    lines.append(f"[{_mark(targets, 'overhead_ratio')}] overhead_ratio (handler p50 / raw boto3 p50)")
    for name, figure in (ov.get("routes") or {}).items():
        lines.append(
            f"        {name:<58} {figure.get('handler_p50_ms')} / {figure.get('raw_p50_ms')} ms = "
            f"{_fmt(figure.get('ratio'))}"
        )
    if "error" in ov:
        lines.append(f"        error: {ov['error']}")

    cs = results.get("cold_start") or {}
    lines.append(
        f"[{_mark(targets, 'cold_start')}] cold_start (import + first invocation, median ms; x bare = median of pairs)"
    )
    for name, figure in (cs.get("functions") or {}).items():
        if "median_ms" in figure:
            lines.append(
                f"        {name:<20} {figure['median_ms']:>8} ms vs bare {figure.get('bare_median_ms')} ms = "
                f"{_fmt(figure.get('ratio'))}x   (of medians {_fmt(figure.get('ratio_of_medians'))}x, "
                f"CPU {_fmt(figure.get('cpu_ratio'))}x, process wall {figure.get('wall_median_ms')} ms)"
            )
        else:
            lines.append(f"        {name:<20} {figure}")
    if "error" in cs:
        lines.append(f"        error: {cs['error']}")

    pk = results.get("package_bytes") or {}
    lines.append(f"[{_mark(targets, 'package_bytes')}] package_bytes")
    for name, figure in (pk.get("functions") or {}).items():
        lines.append(f"        {name:<40} {figure['bytes']:>10} bytes")
    for name, figure in (pk.get("layers") or {}).items():
        lines.append(f"        layer {name[:34]:<34} {figure['bytes']:>10} bytes")
    lines.append(f"        layers total {pk.get('layers_total_bytes')} bytes")

    ph = results.get("partition_heat") or {}
    check = ph.get("model_check") or {}
    lines.append(
        f"[{_mark(targets, 'partition_heat')}] partition_heat (hottest key per mix, per second; limits 1,000 WCU, "
        f"3,000 RCU; model check {'within' if check.get('met') else 'NOT within'} 10%)"
    )
    for name, mix in (ph.get("mixes") or {}).items():
        for space in ("table", "gsi1"):
            top = mix.get(f"hottest_{space}_key") or {}
            lines.append(
                f"        {name:<12} {space:<6} {top.get('key')!s:<44} WCU {top.get('wcu_s')!s:<9} "
                f"RCU {top.get('rcu_s')}"
            )
    for key, figure in (check.get("totals") or {}).items():
        lines.append(
            f"        check {key:<12} predicted {figure['predicted']:<8} measured {figure['measured']:<8} "
            f"error {figure['error']:+.1%}"
        )
    if "error" in ph:
        lines.append(f"        error: {ph['error']}")

    ld = results.get("load") or {}
    lines.append(f"[{_mark(targets, 'load')}] load")
    if "requests" in ld:
        lines.append(
            f"        {ld['clients']} clients x {ld['seconds']} s: {ld['requests']} requests, "
            f"{ld['requests_per_s']} req/s, p50 {ld['p50_ms']} ms, p99 {ld['p99_ms']} ms, errors {ld['errors']}"
        )
    else:
        lines.append(f"        {ld}")
    lines.append("-" * 100)
    met = [k for k, v in targets.items() if v.get("met")]
    missed = [k for k, v in targets.items() if not v.get("met")]
    lines.append(f"targets met: {', '.join(met) or '-'}")
    lines.append(f"targets missed: {', '.join(missed) or '-'}")
    return "\n".join(lines)
