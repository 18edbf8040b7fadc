"""What people read: the report file, charts, the regression gate, highlighted answers and CSV files."""
