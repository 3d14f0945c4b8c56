"""citescope: cited question answering for Chinese e-commerce customer service.

The repository root is the `citescope` package (pyproject.toml maps it with package-dir), so its
folders import as citescope.knowledge, citescope.tools, citescope.agents and citescope.workflows,
each layer importing only the ones below it (docs/architecture.md).
"""
