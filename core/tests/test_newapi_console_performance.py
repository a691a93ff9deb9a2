"""new-api's settings page calls that were 404s and error toasts (issue 28): the performance
tab's ``/api/performance/stats`` and ``/logs``, and the models tab's channel affinity cache
counters. They answer new-api's shapes with this worker's real figures, and say what is off."""

from __future__ import annotations

import httpx

from faregate.testing.harness import AdminClient, GatewayServer

MEMORY = {"alloc", "total_alloc", "sys", "num_gc", "num_goroutine"}


async def test_performance_stats_carry_real_figures_in_new_api_s_shape(admin: AdminClient) -> None:
    data = await admin.ok("GET", "/api/performance/stats")
    assert set(data) == {"cache_stats", "memory_stats", "disk_cache_info", "disk_space_info", "config"}
    memory = data["memory_stats"]
    assert set(memory) == MEMORY and all(isinstance(memory[k], int) for k in MEMORY)
    # a running Python worker has resident memory, collections behind it and its serving tasks
    assert memory["alloc"] > 1 << 20 and memory["total_alloc"] >= memory["alloc"] and memory["num_goroutine"] >= 1
    disk = data["disk_space_info"]
    assert disk["total"] > 0 and disk["used"] + disk["free"] <= disk["total"] and 0 <= disk["used_percent"] <= 100
    # no disk cache: zeros, and the flag says it is off
    assert set(data["cache_stats"].values()) == {0} and "disk_cache_max_bytes" in data["cache_stats"]
    assert data["disk_cache_info"] == {"path": "", "exists": False, "file_count": 0, "total_size": 0}
    config = data["config"]
    assert config["disk_cache_enabled"] is False and config["monitor_enabled"] is False
    assert (config["disk_cache_threshold_mb"], config["disk_cache_max_size_mb"]) == (10, 1024)
    assert (config["monitor_cpu_threshold"], config["monitor_memory_threshold"],
            config["monitor_disk_threshold"]) == (90, 90, 95)


async def test_performance_logs_say_there_is_no_log_directory(admin: AdminClient) -> None:
    assert await admin.ok("GET", "/api/performance/logs") == {
        "log_dir": "", "enabled": False, "file_count": 0, "total_size": 0, "files": None}
    bad = await admin.call("DELETE", "/api/performance/logs?mode=all&value=1")
    assert bad == {"success": False, "message": "invalid mode, must be by_count or by_days"}
    bad = await admin.call("DELETE", "/api/performance/logs?mode=by_days&value=0")
    assert bad["message"] == "invalid value, must be a positive integer"
    none = await admin.call("DELETE", "/api/performance/logs?mode=by_days&value=7")
    assert none == {"success": False, "message": "log directory not configured"}


async def test_performance_actions_collect_or_name_the_missing_disk_cache(admin: AdminClient) -> None:
    assert (await admin.call("POST", "/api/performance/gc"))["success"] is True
    for method, path in (("DELETE", "/api/performance/disk_cache"), ("POST", "/api/performance/reset_stats")):
        answer = await admin.call(method, path)
        assert answer["success"] is False and "disk cache is not available" in answer["message"], path


async def test_channel_affinity_cache_answers_off_in_new_api_s_shape(admin: AdminClient) -> None:
    assert await admin.ok("GET", "/api/option/channel_affinity_cache") == {
        "enabled": False, "total": 0, "unknown": 0, "by_rule_name": {}, "cache_capacity": 0, "cache_algo": ""}
    assert await admin.ok("DELETE", "/api/option/channel_affinity_cache?all=true") == {"deleted": 0}
    missing = await admin.call("DELETE", "/api/option/channel_affinity_cache")
    assert missing["success"] is False and "rule_name" in missing["message"]
    assert (await admin.call("DELETE", "/api/option/channel_affinity_cache?rule_name=x"))["success"] is False


async def test_these_routes_are_root_only(gateway: GatewayServer) -> None:
    async with httpx.AsyncClient(base_url=gateway.base_url) as anonymous:
        for path in ("/api/performance/stats", "/api/performance/logs", "/api/option/channel_affinity_cache"):
            answer = (await anonymous.get(path)).json()
            assert answer["success"] is False, path
