"""The audit log's admin page in a real browser: a failed sign-in typed into the workbench's form,
and changes made by the CLI and the API, are listed for a superuser, newest first, with a detail
page that offers no way to change or delete them. With LOCALRAG_SCREENSHOTS set it also saves
docs/screenshots/audit-admin-desktop.png:

    LOCALRAG_SCREENSHOTS=docs/screenshots make test \\
        PYTEST_ARGS="tests/browser/test_audit_admin_browser.py"
"""

from __future__ import annotations

import httpx

from access.api_tokens import token_create
from tests.browser.conftest import (
    DESKTOP,
    PASSWORD,
    css,
    screenshot_dir,
    screenshot_save,
    sign_in,
    wait,
)
from tests.commands.support import rag_ok


def test_the_admin_lists_who_did_what_and_changes_nothing(browser, account, config_override,
                                                          tmp_path):
    from selenium.webdriver.support import expected_conditions as EC

    config_override(project_root=tmp_path)
    account("root", superuser=True)
    account("ana")
    rag_ok("kb", "create", "field", "--name", "Field reports")
    rag_ok("grant", "ana", "field", "reader")
    rag_ok("grant", "ana", "field", "maintainer")
    secret = token_create(username="root", name="ops laptop").secret
    response = httpx.patch(f"{browser.base_url}/knowledge-bases/field",
                           json={"outbound": "allowed"},
                           headers={"Authorization": f"Bearer {secret}"}, timeout=10)
    assert response.status_code == 200, response.text
    browser.get(f"{browser.base_url}/workbench/login/")
    browser.find_element(*css("input[name=username]")).send_keys("mallory")
    browser.find_element(*css("input[name=password]")).send_keys("guess-" + PASSWORD)
    browser.find_element(*css("form.stack button[type=submit]")).click()
    wait(browser, EC.presence_of_element_located(css("input[name=username]")))

    sign_in(browser, "root")
    browser.get(f"{browser.base_url}/admin/")
    # The admin's navigation sidebar folded, as its « button leaves it: the log has the width.
    browser.execute_script("localStorage.setItem('django.admin.navSidebarIsOpen', 'false')")
    browser.get(f"{browser.base_url}/admin/audit/auditentry/")
    table = wait(browser, EC.presence_of_element_located(css("#result_list")))
    rows = [row.text for row in table.find_elements(*css("tbody tr"))]
    assert "signin.failed" in rows[0] and "mallory" in rows[0] and "workbench" in rows[0]
    assert "knowledge_base.update" in rows[1] and "token:" in rows[1] and "api" in rows[1]
    assert any("grant.update" in row and "cli:" in row for row in rows)
    assert not browser.find_elements(*css(".object-tools a.addlink"))  # nothing to add
    folder = screenshot_dir()
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        screenshot_save(browser, folder / "audit-admin-desktop.png", size=DESKTOP)

    table.find_elements(*css("tbody tr th a"))[1].click()
    wait(browser, EC.presence_of_element_located(css("fieldset")))
    page = browser.page_source
    assert '"before": "local-only"' in page and '"after": "allowed"' in page
    assert not browser.find_elements(*css("input[type=submit]"))  # no save, no delete
    assert not browser.find_elements(*css("a.deletelink"))
