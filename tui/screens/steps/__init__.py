"""One module per step pane of the session screen, in the order of the method."""
