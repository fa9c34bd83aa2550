// The Overlay stage.
