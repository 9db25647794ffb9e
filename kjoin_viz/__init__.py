"""kjoin_viz: widgets and charts over kjoin traces."""
