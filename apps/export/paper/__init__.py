"""The paper: saturation, cross-tabulations, figures and the methods section (docs/paper.md).

`saturation`, `crosstab`, `figures` and `methods` are pure (no Django); `data` reads the study into their
plain inputs; `views` serves the pages and downloads.
"""
