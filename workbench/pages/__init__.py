"""What each page shows and does, one module per page of workbench/views/ (named alike): the
views stay a few lines that call these."""
