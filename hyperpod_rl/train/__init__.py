"""Training: runs inside the cluster (a Ray Job). Never imports widgets, kubernetes or plotly."""
