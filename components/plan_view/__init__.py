"""Views of an offline plan for people: the text tree, a Markdown summary for pull requests, a Mermaid graph."""
