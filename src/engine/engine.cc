// engine placeholder
