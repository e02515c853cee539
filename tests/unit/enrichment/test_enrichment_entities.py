"""Entity extraction: error codes, versions, products, dates (precision over recall)."""

from __future__ import annotations

from ragline.enrichment import extract_entities


def test_error_codes() -> None:
    text = (
        "Got E1234, ORA-00942 and ERR_CONNECTION_RESET, then ECONNREFUSED; a ValueError "
        "and HTTP 503, status code 404, CVE-2024-12345, HRESULT 0x80070005."
    )
    assert extract_entities(text)["error_code"] == (
        "E1234",
        "ORA-00942",
        "ERR_CONNECTION_RESET",
        "ECONNREFUSED",
        "ValueError",
        "HTTP 503",
        "HTTP 404",
        "CVE-2024-12345",
        "0x80070005",
    )


def test_not_error_codes() -> None:
    found = extract_entities("Verify the SHA256 digest and UTF8 encoding of the MP3.")
    assert "error_code" not in found


def test_versions_but_not_ips_dates_or_section_numbers() -> None:
    text = (
        "Upgrade from v4.2 to version 4.3 (4.3.0-rc1) on 10.0.0.1, see Table 3.2.1, "
        "released 2024.01.15; Python 3.9.1."
    )
    assert extract_entities(text)["version"] == ("v4.2", "4.3", "4.3.0-rc1", "3.9.1")


def test_products() -> None:
    text = (
        "The Company ships WidgetPro® and Acme Cloud Gateway. PostgreSQL and OpenSearch "
        "store data. Open Settings to change it. In January we moved to iPhone."
    )
    products = extract_entities(text)["product"]
    assert products == ("WidgetPro", "Acme Cloud Gateway", "PostgreSQL", "OpenSearch", "iPhone")


def test_products_can_be_skipped_and_types_are_capped() -> None:
    text = " ".join(f"E{1000 + i}" for i in range(50)) + " PostgreSQL"
    found = extract_entities(text, max_per_type=5, products=False)
    assert found["error_code"] == ("E1000", "E1001", "E1002", "E1003", "E1004")
    assert "product" not in found


def test_dates_are_iso() -> None:
    assert extract_entities("Due March 3, 2024.")["date"] == ("2024-03-03",)


def test_context_gives_codes_versions_and_dates_but_no_products() -> None:
    found = extract_entities(
        "Check the card.", context="Billing Help Center\nWhy ERR_CARD_DECLINED after v2.1?"
    )
    assert found == {"error_code": ("ERR_CARD_DECLINED",), "version": ("v2.1",)}
