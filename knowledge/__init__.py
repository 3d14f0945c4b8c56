"""The knowledge layer: documents -> normalised, chunked, labelled chunks -> indexes."""
