"""Documents: PDF and Markdown pages -> positioned lines -> structure -> QA spans -> pairs."""
