"""QGIS's proxy rules (core/proxy.py): settings read as QGIS writes them, each URL routed as QGIS routes it."""

from __future__ import annotations

from geogpt_qgis.core.proxy import DIRECT, SYSTEM, ProxyConfig, proxy_from_settings


def _read(**values: object) -> ProxyConfig:
    return proxy_from_settings(values.get)


def test_an_http_proxy_with_a_login_and_both_lists():
    config = _read(
        proxyEnabled="true",
        proxyType="HttpProxy",
        proxyHost="proxy.example",
        proxyPort="3128",
        proxyUser="ann@work",
        proxyPassword="a:b/c",
        noProxyUrls=["http://intranet/", " "],
        proxyExcludedUrls="https://maps.example",
    )
    assert config.url == "http://ann%40work:a%3Ab%2Fc@proxy.example:3128"
    assert config.describe() == "http://proxy.example:3128"
    assert config.route("http://intranet/wfs?x=1") == DIRECT
    assert config.route("https://maps.example/ogc") == SYSTEM
    assert config.route("https://api.openai.com/v1/models") == config.url
    assert config.route("http://127.0.0.1:11434/api/tags") == config.url  # QGIS makes no exception for loopback


def test_off_system_and_unusable_types_take_the_systems_proxy():
    assert _read() == ProxyConfig()
    assert _read(proxyEnabled=False, proxyType="HttpProxy", proxyHost="p", proxyPort="8080").url is None
    assert _read(proxyEnabled=True, proxyType="DefaultProxy", proxyHost="p").route("http://x/") == SYSTEM
    assert _read(proxyEnabled=True, proxyType="FtpCachingProxy", proxyHost="p").url is None
    assert _read(proxyEnabled=True, proxyType="HttpProxy", proxyHost=" ").url is None
    assert _read(proxyEnabled=True, proxyType="DefaultProxy", noProxyUrls="http://a").route("http://a/b") == DIRECT


def test_socks_ipv6_odd_ports_and_stored_credentials():
    assert _read(proxyEnabled=True, proxyType="Socks5Proxy", proxyHost="::1", proxyPort="1080").url == (
        "socks5://[::1]:1080"
    )
    assert _read(proxyEnabled=True, proxyType="HttpCachingProxy", proxyHost="p", proxyPort="x").url == "http://p"
    assert _read(proxyEnabled=True, proxyType="HttpProxy", proxyHost="p", proxyPort=70000).url == "http://p"
    stored = _read(proxyEnabled=True, proxyType="HttpProxy", proxyHost="p", proxyPort="1", authcfg="abc1234")
    assert stored.authcfg == "abc1234"
    assert stored.with_credentials("u", "p w").url == "http://u:p%20w@p:1"
    assert stored.with_credentials("", "").url == "http://p:1"
