// /api/docs: Swagger UI on the management API's own document (a file, not an inline script:
// the page's policy runs scripts from this origin only). The validator badge is off: it
// would send the document to a third party.
window.addEventListener("DOMContentLoaded", () => {
  window.ui = SwaggerUIBundle({
    url: "openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
});
