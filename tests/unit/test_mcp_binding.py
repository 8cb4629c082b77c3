"""Where the in-plugin MCP server may listen (Qt-free rules)."""

from __future__ import annotations

import pytest

from geogpt_qgis.mcp_server.binding import BindRefused, check_bind, server_url


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"])
def test_loopback_is_fine_without_a_warning(host):
    assert check_bind(host, 8765) is None


@pytest.mark.parametrize("host", ["192.168.1.20", "10.0.0.5", "fe80::1"])
def test_an_explicit_other_address_is_accepted_with_a_warning(host):
    warning = check_bind(host, 8765)
    assert warning is not None and "anyone on that network" in warning and host in warning


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "my-laptop", "example.com"])  # noqa: S104 - refused here
def test_wildcards_and_names_are_refused_with_what_to_type(host):
    with pytest.raises(BindRefused, match=r"127\.0\.0\.1"):
        check_bind(host, 8765)


@pytest.mark.parametrize("port", [-1, 70000])
def test_a_port_out_of_range_is_refused(port):
    with pytest.raises(BindRefused, match="not a TCP port"):
        check_bind("127.0.0.1", port)


def test_urls():
    assert server_url("127.0.0.1", 8765) == "http://127.0.0.1:8765/mcp"
    assert server_url("::1", 9000) == "http://[::1]:9000/mcp"
