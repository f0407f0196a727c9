"""HTML pages become Markdown blocks (`ragkit.text.html`)."""

from ragkit.text import html_to_markdown

PAGE = """<html><head><title>Status</title><style>p{}</style></head><body>
<h1>Data retention</h1><p>Deleted workspaces are kept for <b>30 days</b> and then purged.</p>
<ul><li>Backups: 35 days</li><li>Audit logs: 1 year</li></ul>
<table><tr><th>Plan</th><th>Log retention</th></tr><tr><td>Team</td><td>90 days</td></tr></table>
</body></html>"""


def test_html_becomes_markdown_blocks():
    md = html_to_markdown(PAGE)
    assert md.startswith("# Data retention\n\nDeleted workspaces are kept for 30 days")
    assert "- Backups: 35 days\n- Audit logs: 1 year" in md
    assert "| Plan | Log retention |\n|---|---|\n| Team | 90 days |" in md
    assert "p{}" not in md and "Status" not in md
