"""Analysis of run directories: loading into pandas, outcome and behavior metrics, plots and reports."""
