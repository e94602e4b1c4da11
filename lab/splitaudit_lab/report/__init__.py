"""The lab's results as text or JSON: Outputs extending the product's with the stack's and the scenarios' reports."""
