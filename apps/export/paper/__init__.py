"""The paper: saturation, cross-tabulations, figures and the methods section (docs/paper.md).

`saturation`, `crosstab`, `figures` and `methods` compute on plain data (each is in the import
contract's list); `data`, `artifacts`, `facts` and `evolution` read the study into their inputs;
`views` serves the Paper screen and its downloads.
"""
