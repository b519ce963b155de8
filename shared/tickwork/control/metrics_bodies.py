"""The API's metrics bodies (`GET /v1/metrics`, `GET /v1/metrics/catalogue`): pydantic models at the edge."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer

from tickwork.control.metrics_catalogue import CATALOGUE, MetricsRequest, Series


def _zulu(instant: datetime) -> str:
    return instant.strftime("%Y-%m-%dT%H:%M:%SZ")


Instant = Annotated[datetime, PlainSerializer(_zulu, return_type=str)]


class MetricSeriesBody(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str = Field(description="The catalogue name.")
    label: str
    unit: str = Field(description="CloudWatch's unit: Milliseconds, Count, Percent, Seconds.")
    dimensions: dict[str, str] = Field(description="`{}` for a total; else `band` or `tenant`.")
    timestamps: list[Instant] = Field(description="Each period's start, from `start` to `end`, step `period`.")
    values: list[float | None] = Field(description="One per timestamp; null where there is no data.")


class MetricsBody(BaseModel):
    model_config = ConfigDict(frozen=True)

    start: Instant = Field(description="The grid's first instant: the request's start, aligned down to the period.")
    end: Instant
    period: int
    series: list[MetricSeriesBody]

    @classmethod
    def of(cls, request: MetricsRequest, series: list[Series]) -> MetricsBody:
        return cls(
            start=request.start,
            end=request.end,
            period=request.period,
            series=[
                MetricSeriesBody(
                    name=s.of.name,
                    label=s.of.label,
                    unit=s.of.unit,
                    dimensions=s.of.dimensions,
                    timestamps=s.timestamps,
                    values=s.values,
                )
                for s in series
            ],
        )


class CatalogueItem(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    label: str
    unit: str
    dimensions: list[str] = Field(description="The breakdowns it has: `band`, `tenant`.")


class Catalogue(BaseModel):
    model_config = ConfigDict(frozen=True)

    items: list[CatalogueItem]

    @classmethod
    def of_all(cls) -> Catalogue:
        return cls(
            items=[
                CatalogueItem(name=e.name, label=e.label, unit=e.unit, dimensions=list(e.dimensions))
                for e in CATALOGUE.values()
            ]
        )
