"""SWE instances from pull requests: collect, build images, sanitize, export."""
