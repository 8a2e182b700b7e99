// xlaport's site: a folded solution opens when its title is tapped.
//
// sphinx-exercise titles a solution "Solution to Exercise N" with a link back to the exercise, and
// sphinx-togglebutton folds it. Tapping that link (most of the title) used to jump back to the exercise, leave the
// solution closed and throw from togglebutton's handler, which only knows the title, its icon and its button. Here a
// tap anywhere on a folded admonition's title, link included, presses the title's toggle button instead.
document.addEventListener(
  "click",
  (event) => {
    const target = event.target;
    if (!(target instanceof Element)) return;
    const title = target.closest(".admonition.dropdown .admonition-title, .admonition.toggle .admonition-title");
    if (!title || target.closest(".toggle-button")) return; // the button's own click: togglebutton handles it
    if (target === title || target.classList.contains("tb-icon") || target.tagName.toLowerCase() === "polyline") {
      return; // the parts togglebutton already handles
    }
    const button = title.querySelector(".toggle-button");
    if (!button) return;
    event.preventDefault();
    event.stopPropagation();
    button.click();
  },
  true,
);
