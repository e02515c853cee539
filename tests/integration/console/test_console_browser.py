"""The console in headless Chromium (Debian's ``chromium`` + the PyPI ``playwright``
driver, never ``playwright install``), clicking through every page on the real stack.
The screenshots in docs/console.md are the ones these tests take (docs/img/console-*):
they are written there only with ``RAGLINE_UPDATE_SCREENSHOTS=1`` (review, then commit),
otherwise to a temporary directory, so a test run leaves the checkout as it was."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import uvicorn
from console_world import GROUP_A, World, publish_dead_letter, token

from ragline.config import Settings
from ragline.platform.stack.testing import free_port

pytestmark = pytest.mark.integration

CHROMIUM = os.environ.get("RAGLINE_CHROMIUM", "/usr/bin/chromium")
DOCS_IMG = Path(__file__).resolve().parents[3] / "docs" / "img"
UPDATE_SCREENSHOTS = os.environ.get("RAGLINE_UPDATE_SCREENSHOTS") == "1"

if shutil.which(CHROMIUM) is None:  # .ci/run installs it; say so rather than skip quietly
    pytest.fail(
        f"{CHROMIUM} not found: apt-get install -y --no-install-recommends chromium",
        pytrace=False,
    )


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def console_url(console_app: Any) -> AsyncIterator[str]:
    port = free_port()
    config = uvicorn.Config(
        console_app, host="127.0.0.1", port=port, lifespan="off", log_config=None
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    await task


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def browser() -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        b = await p.chromium.launch(executable_path=CHROMIUM)
        yield b
        await b.close()


async def shot(page: Any, name: str, img: Path) -> None:
    """A full-page screenshot: the page rendered (the test fails when it cannot be)."""
    img.mkdir(parents=True, exist_ok=True)
    path = img / f"console-{name}.png"
    await page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 0


async def test_a_non_admin_token_cannot_sign_in(
    browser: Any, console_url: str, world: World
) -> None:
    from playwright.async_api import expect

    page = await browser.new_page(viewport={"width": 1366, "height": 800})
    await page.goto(f"{console_url}/console/search")
    await expect(page).to_have_url(f"{console_url}/console/login?next=search")
    await page.fill("#token", token(world.tenant))
    await page.click("#sign-in")
    await expect(page.locator("#status")).to_contain_text("admin role")
    await page.close()


async def test_click_through_every_page(
    browser: Any, console_url: str, world: World, console_settings: Settings, tmp_path: Path
) -> None:
    from playwright.async_api import expect

    img = DOCS_IMG if UPDATE_SCREENSHOTS else tmp_path

    await publish_dead_letter(
        console_settings,
        world.tenant,
        "fs:reports/q3-export.csv",
        UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
        raw=b"never shown",
    )
    page = await browser.new_page(viewport={"width": 1366, "height": 800})
    await page.goto(f"{console_url}/console/login")
    await shot(page, "login", img)
    await page.fill("#token", token(world.tenant, admin=["*"], sub="alice@ops"))
    await page.keyboard.press("Tab")
    await page.keyboard.press("Enter")  # the sign-in button, by keyboard
    await expect(page).to_have_url(f"{console_url}/console/search")
    await expect(page.locator("#who")).to_contain_text("alice@ops")

    # search playground: as a principal of group A
    await page.fill("#tenant", world.tenant)
    await page.fill("#groups", GROUP_A)
    await page.fill("#query", "how many vacation days does an employee get")
    await page.press("#query", "Enter")
    rows = page.locator("#results table").first.locator("tbody tr")
    await expect(rows.first).to_be_visible()
    await expect(page.locator("#abstain")).to_contain_text("Answered")
    assert "Payroll secrets" not in await page.locator("#results").inner_text()
    await shot(page, "search", img)

    # why not: a document outside the principal's ACL (the form keeps tenant and groups)
    await page.click("[data-nav=whynot]")
    await expect(page).to_have_url(f"{console_url}/console/whynot")
    await page.fill("#document_id", "hr:payroll-b")
    await page.fill("#query", "payroll bonus table")
    await page.click("#explain")
    await expect(page.locator("#cause")).to_have_text("outside_acl")
    assert "BCANARY" not in await page.locator("#explanation").inner_text()
    await page.fill("#document_id", "kb:err-4705")
    await page.fill("#query", "vacation days expire")
    await page.click("#explain")
    # the console reads each leg 50 deep: a candidate, below the requested top_k
    await expect(page.locator("#cause")).to_have_text("below_top_k")
    await shot(page, "whynot", img)

    # documents: the quarantined one's reason, then a repair with confirmation
    await page.click("[data-nav=documents]")
    await page.fill("#tenant", world.tenant)
    await page.click("#list-docs")
    await expect(page.locator("#doc-list")).to_contain_text("secret_blocked")
    await page.click("[data-doc='ops:disk']")
    await expect(page.locator("#doc-detail")).to_contain_text("Timeline")
    await expect(page.locator("#doc-detail")).to_contain_text("No pending dead letters")
    await page.click("#repair")
    await expect(page.locator("#confirm")).to_be_visible()
    await page.click("#confirm-ok")
    await expect(page.locator(".actions-out")).to_contain_text("chunks_written")
    await shot(page, "documents", img)

    # dead letters: listed redacted, inspected, a purge cancelled at the confirmation
    await page.click("[data-nav=dead-letters]")
    await expect(page.locator("#dlq")).to_contain_text("UnicodeDecodeError")
    assert "q3-export" not in await page.locator("#dlq").inner_text()
    await page.locator("[data-inspect]").first.click()
    await expect(page.locator("#inspect pre")).to_contain_text("error_class")
    await page.click("[data-purge='doc.fetched.dlq']")
    await expect(page.locator("#confirm-text")).to_contain_text("1 dead letter")
    await page.keyboard.press("Escape")  # cancel, by keyboard
    await expect(page.locator("#confirm")).to_be_hidden()
    await expect(page.locator("#dlq")).to_contain_text("UnicodeDecodeError")  # still there
    await shot(page, "dead-letters", img)

    # pipeline: engines and lag
    await page.click("[data-nav=pipeline]")
    await expect(page.locator("#engines")).to_contain_text("postgres")
    await expect(page.locator("#pipeline")).to_contain_text("indexer")
    await expect(page.locator("#throughput")).to_contain_text("in the last hour")
    await shot(page, "pipeline", img)

    # spaces: the live one, and a flip refused without a reason
    await page.click("[data-nav=spaces]")
    await expect(page.locator("#spaces")).to_contain_text("live")
    await shot(page, "spaces", img)
    await page.click("#rollback")
    await expect(page.locator("#error")).to_contain_text("reason")

    # the audit trail has what was done above, with who did it
    await page.click("[data-nav=audit]")
    await expect(page.locator("#audit")).to_contain_text("repair")
    await expect(page.locator("#audit")).to_contain_text("alice@ops")
    await shot(page, "audit", img)
    await page.close()
