"""Config → where a chart comes from: the one conversion the toolkit and sharing layers share."""

from __future__ import annotations

from components.config import ChartSourceConfig
from components.gpu.chart import ChartSource


def chart_source(settings: ChartSourceConfig | None) -> ChartSource | None:
    """The ChartSource of `gpushare:chartSources.<chart>`, None for the chart's public repository."""
    if settings is None:
        return None
    return ChartSource(repository=settings.repository, path=settings.path)
